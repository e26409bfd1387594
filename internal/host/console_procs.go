package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/console"
)

// kernelFor is the client of node's kernel actor (this node's for "" or
// its own address; see memberKernel) carrying who's process's token: the
// kernel actor authorizes each request as it does any token's, and another
// member's verifies it with the cluster's shared key.
func (b *consoleBackend) kernelFor(who console.Principal, node string) (kernelclient.Client, error) {
	p, err := b.proc(who)
	if err != nil {
		return kernelclient.Client{}, err
	}
	tok, ok := p.Token()
	if !ok {
		return kernelclient.Client{}, fmt.Errorf("%w: the session's process %v holds no capability token", console.ErrDenied, p.PID())
	}
	k, err := b.memberKernel(p, node)
	if err != nil {
		return kernelclient.Client{}, err
	}
	k.Token = tok.Encode() // IMPORTANT: the session's token, never the node's (PeerKernel's)
	return k, nil
}

// memberKernel is the client of node's kernel actor: this node's, or
// another member's when p may see the cluster (seesCluster) and node is a
// member this node sees alive. Any other address is refused before
// anything is sent to it.
func (b *consoleBackend) memberKernel(p *kernel.Process, node string) (kernelclient.Client, error) {
	if !b.remote(node) {
		return b.rt.node.KernelClient(), nil
	}
	m := b.rt.Member()
	if m == nil {
		return kernelclient.Client{}, fmt.Errorf("%w: this node is in no cluster, so it has no member %q: open /procs for its own processes", console.ErrNotFound, node)
	}
	if err := seesCluster(p); err != nil {
		return kernelclient.Client{}, err
	}
	if !slices.ContainsFunc(m.Status().Alive(), func(i cluster.MemberInfo) bool { return i.Address == node }) {
		return kernelclient.Client{}, fmt.Errorf("%w: %q is not a member this node sees alive: the Cluster page lists them", console.ErrNotFound, node)
	}
	return b.rt.node.PeerKernel(node), nil
}

// remote says node names another member than this node ("" and this
// node's own address name it).
func (b *consoleBackend) remote(node string) bool {
	m := b.rt.Member()
	return node != "" && (m == nil || node != m.Address())
}

// seesCluster checks that p may see the cluster beyond this node: the
// members' forges in flight (runs of no tool), tool roots and processes.
// IMPORTANT: it needs what an agent run needs to be shown (runVisibleTo):
// read on the whole tool tree. Covers consumes no use (a page is not an
// action).
func seesCluster(p *kernel.Process) error {
	if p.Covers(capability.Read, "") {
		return nil
	}
	return fmt.Errorf("%w: the cluster's members, their forges in flight and another member's processes need read on the whole tool tree, "+
		"as an agent's runs do, and this session's token has none: log in with a token minted by 'agentos token --grant read' (no scope)", console.ErrDenied)
}

// askMember runs ask on node's kernel actor within 5 s (as 'agentos ps
// --cluster' asks each member); another member's failure, or refusal,
// wraps console.ErrNoAnswer.
func askMember[T any](ctx context.Context, b *consoleBackend, who console.Principal, node string, ask func(context.Context, kernelclient.Client) (T, error)) (T, error) {
	var zero T
	k, err := b.kernelFor(who, node)
	if err != nil {
		return zero, err
	}
	if !b.remote(node) {
		return ask(ctx, k)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := ask(ctx, k)
	if err != nil {
		return zero, fmt.Errorf("%w: %s: %w", console.ErrNoAnswer, node, err)
	}
	return v, nil
}

// Processes implements console.ProcsBackend: 'agentos ps [--cluster]',
// through node's kernel actor. A process is marked a supervisor when the
// recent events show it restarting a child or its image says so.
func (b *consoleBackend) Processes(ctx context.Context, who console.Principal, node string) ([]console.Proc, error) {
	type table struct {
		ps  []kernel.ProcInfo
		evs []kernel.Event
	}
	t, err := askMember(ctx, b, who, node, func(ctx context.Context, k kernelclient.Client) (table, error) {
		ps, err := k.PS(ctx)
		if err != nil {
			return table{}, err
		}
		evs, err := k.Events(ctx, 0, 0)
		return table{ps, evs}, err
	})
	if err != nil {
		return nil, err
	}
	restarts := map[kernel.PID]bool{}
	for _, e := range t.evs {
		if e.Kind == kernel.EventRestart {
			restarts[e.PID] = true
		}
	}
	out := make([]console.Proc, 0, len(t.ps))
	for _, p := range t.ps {
		out = append(out, console.Proc{
			PID: uint64(p.PID), Parent: uint64(p.Parent), Name: p.Name, Image: p.Image, Status: string(p.Status), Mailbox: p.Mailbox,
			Started: p.Started, Calls: p.Calls, Usage: sortedMeters(p.Usage), Left: sortedMeters(p.Left),
			Supervisor: restarts[p.PID] || strings.Contains(strings.ToLower(p.Image), "supervisor"),
		})
	}
	return out, nil
}

// Events implements console.ProcsBackend: 'agentos events [--cluster]',
// through node's kernel actor.
func (b *consoleBackend) Events(ctx context.Context, who console.Principal, node string, after uint64, limit int) ([]console.ProcEvent, error) {
	evs, err := askMember(ctx, b, who, node, func(ctx context.Context, k kernelclient.Client) ([]kernel.Event, error) {
		return k.Events(ctx, after, pageLimit(limit, 100))
	})
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

// Cluster implements console.ProcsBackend: 'agentos cluster status' (every
// member asked for its status; one that does not answer listed with why),
// for a session that may see the cluster (seesCluster). A node in no
// cluster says so to any session.
func (b *consoleBackend) Cluster(ctx context.Context, who console.Principal) (console.ClusterView, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.ClusterView{}, err
	}
	if b.rt.Member() == nil {
		return console.ClusterView{}, nil
	}
	if err := seesCluster(p); err != nil {
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
