package kerneltools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/asynkron/protoactor-go/actor"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/transpile"
)

// Placements of exec_tool in a cluster (execToolArgs.Placement).
const (
	// PlaceAuto (""): this node, unless as many runs are in flight here as
	// it has sandbox workers; then another member.
	PlaceAuto = ""
	// PlaceLocal: this node, always.
	PlaceLocal = "local"
	// PlaceSpread: another member when this node has a run in flight,
	// this one otherwise.
	PlaceSpread = "spread"
)

// ErrPlacement: exec_tool's placement names no member of the cluster.
var ErrPlacement = errors.New("exec_tool: bad placement")

// busy counts a run in flight on this node's executor until done is
// called.
func (n *Node) busy() (done func()) {
	n.inflight.Add(1)
	return func() { n.inflight.Add(-1) }
}

// placement chooses where a run executes: nil is this node, else the
// address of another member. A run is placed elsewhere only in a cluster
// whose journal every member shares (the run's journal entries then come
// back with it, readable from any node).
func (n *Node) placement(asked string) (*actor.PID, error) {
	c := n.cluster()
	if asked == PlaceLocal {
		return nil, nil
	}
	if c == nil || n.opts.Journal == nil || !n.opts.Journal.Shared() {
		if asked != PlaceAuto && asked != PlaceSpread {
			return nil, fmt.Errorf("%w: %q: this node is in no cluster with a shared journal, so runs execute here (placement \"local\")", ErrPlacement, asked)
		}
		return nil, nil
	}
	self := c.m.Address()
	var others []string
	for _, m := range c.m.Status().Alive() {
		if m.Address != self {
			others = append(others, m.Address)
		}
	}
	switch asked {
	case PlaceAuto, PlaceSpread:
		limit := int64(n.workers())
		if asked == PlaceSpread {
			limit = 1
		}
		if len(others) == 0 || n.inflight.Load() < limit {
			return nil, nil
		}
		addr := others[int(n.spread.Add(1))%len(others)]
		return actor.NewPID(addr, n.exec.Id), nil
	default:
		if asked == self {
			return nil, nil
		}
		for _, o := range others {
			if o == asked {
				return actor.NewPID(o, n.exec.Id), nil
			}
		}
		return nil, fmt.Errorf("%w: %q is not a member of the cluster seen alive (members: %v, this node %s); use \"local\", \"spread\" or one of them", ErrPlacement, asked, others, self)
	}
}

// workers is how many runs this node's executor runs at once.
func (n *Node) workers() int {
	if w := n.run.Workers; w > 0 {
		return w
	}
	return runtime.GOMAXPROCS(0) // the executor's default
}

// runOn runs req on the executor actor at pid, another member's: the entry
// file's content hash travels with it (the member refuses another version)
// and the caller's home is this node (its quota is charged here). A member
// that refuses the version or does not answer leaves the run to this node.
func (n *Node) runOn(ctx context.Context, pid *actor.PID, req execclient.RunRequest) (execclient.Result, string, error) {
	// The version the approval gate judged: with the gate on it is always
	// set (gateRun), so the file is read here only when no gate judged it.
	pinned := req.Hash
	if req.Hash == "" {
		src, err := n.opts.Jail.ReadFile(req.Path)
		if err != nil {
			return execclient.Result{}, "", err
		}
		req.Hash = transpile.Hash(src)
	}
	if req.Caller != nil {
		home := *req.Caller
		home.Home = n.cluster().m.Address()
		req.Caller = &home
	}
	remote := execclient.Client{PID: pid, Root: n.rootCtx}
	res, runID, err := remote.Run(ctx, req)
	if errors.Is(err, execclient.ErrStaleTool) || errors.Is(err, execclient.ErrUnavailable) || errors.Is(err, execclient.ErrNotCleared) {
		n.opts.Logger.Info("exec_tool: the run placed on another node comes back here", slog.String("node", pid.Address), slog.Any("why", err))
		req.Hash = pinned
		if req.Caller != nil {
			req.Caller.Home = ""
		}
		done := n.busy()
		defer done()
		return n.execClient.Run(ctx, req)
	}
	return res, runID, err
}
