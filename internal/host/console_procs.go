package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/console"
)

// kernelFor is the kernel actor's client carrying who's process's token:
// the kernel actor authorizes each request as it does any token's.
func (b *consoleBackend) kernelFor(who console.Principal) (kernelclient.Client, error) {
	p, err := b.proc(who)
	if err != nil {
		return kernelclient.Client{}, err
	}
	tok, ok := p.Token()
	if !ok {
		return kernelclient.Client{}, fmt.Errorf("%w: the session's process %v holds no capability token", console.ErrDenied, p.PID())
	}
	k := b.rt.node.KernelClient()
	k.Token = tok.Encode()
	return k, nil
}

// Processes implements console.ProcsBackend: 'agentos ps', through the
// kernel actor. A process is marked a supervisor when the recent events
// show it restarting a child or its image says so.
func (b *consoleBackend) Processes(ctx context.Context, who console.Principal) ([]console.Proc, error) {
	k, err := b.kernelFor(who)
	if err != nil {
		return nil, err
	}
	ps, err := k.PS(ctx)
	if err != nil {
		return nil, err
	}
	evs, err := k.Events(ctx, 0, 0)
	if err != nil {
		return nil, err
	}
	restarts := map[kernel.PID]bool{}
	for _, e := range evs {
		if e.Kind == kernel.EventRestart {
			restarts[e.PID] = true
		}
	}
	out := make([]console.Proc, 0, len(ps))
	for _, p := range ps {
		out = append(out, console.Proc{
			PID: uint64(p.PID), Parent: uint64(p.Parent), Name: p.Name, Image: p.Image, Status: string(p.Status), Mailbox: p.Mailbox,
			Started: p.Started, Calls: p.Calls, Usage: sortedMeters(p.Usage), Left: sortedMeters(p.Left),
			Supervisor: restarts[p.PID] || strings.Contains(strings.ToLower(p.Image), "supervisor"),
		})
	}
	return out, nil
}

// Events implements console.ProcsBackend: 'agentos events', through the
// kernel actor.
func (b *consoleBackend) Events(ctx context.Context, who console.Principal, after uint64, limit int) ([]console.ProcEvent, error) {
	k, err := b.kernelFor(who)
	if err != nil {
		return nil, err
	}
	evs, err := k.Events(ctx, after, pageLimit(limit, 100))
	if err != nil {
		return nil, err
	}
	out := make([]console.ProcEvent, 0, len(evs))
	for _, e := range evs {
		out = append(out, console.ProcEvent{Seq: e.Seq, Time: e.Time, Kind: string(e.Kind), PID: uint64(e.PID), Parent: uint64(e.Parent),
			Name: e.Name, Reason: e.Reason, Meter: e.Meter, Amount: e.Amount, Detail: e.Detail})
	}
	return out, nil
}

// Cluster implements console.ProcsBackend: 'agentos cluster status'.
func (b *consoleBackend) Cluster(ctx context.Context, who console.Principal) (console.ClusterView, error) {
	if _, err := b.proc(who); err != nil {
		return console.ClusterView{}, err
	}
	rep, err := b.rt.ClusterReport(ctx)
	if errors.Is(err, ErrNotClustered) {
		return console.ClusterView{}, nil
	}
	if err != nil {
		return console.ClusterView{}, err
	}
	v := console.ClusterView{Clustered: true, Cluster: rep.Cluster, Self: rep.Self, Left: rep.Left}
	for _, m := range rep.Members {
		v.Members = append(v.Members, console.ClusterMember{ID: m.ID, Address: m.Address, Kinds: m.Kinds, Root: m.Root, PID: m.PID, Version: m.Version,
			Forges: m.Forges, Activations: m.Activations, Error: m.Error})
	}
	return v, nil
}
