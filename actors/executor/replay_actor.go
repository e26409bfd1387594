package executor

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
)

// onReplay replays a recorded run (ReplayWith on the actor's journal) on
// its own goroutine, as onRun runs a tool, registered under its run key so
// that a Cancel ends it; the reply goes straight to the sender from there.
func (a *execActor) onReplay(ctx actor.Context, m *pb.Replay) {
	sender, self, sys := ctx.Sender(), ctx.Self(), ctx.ActorSystem()
	if sender == nil {
		ctx.Logger().Warn("executor: Replay without a sender; use client.Client")
		return
	}
	s := a.s
	if s.opts.Journal == nil {
		ctx.Respond(&pb.Replayed{Failure: failureOf(fmt.Errorf("%w: run %s cannot be replayed here", execclient.ErrNoJournal, m.GetRunId()))})
		return
	}
	// A Cancel that crossed the Replay leaves runCtx cancelled: the replay
	// runs already cancelled.
	runCtx, stop, _, err := s.keyedContext(ctx, m.GetRunKey())
	if err != nil {
		ctx.Respond(&pb.Replayed{Failure: failureOf(err)})
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer stop()
		defer s.forget(m.GetRunKey())
		rep, panicked := s.replay(runCtx, m)
		if panicked != nil {
			sys.Root.Send(self, &runPanicked{value: panicked})
		}
		sys.Root.Send(sender, rep)
	}()
}

// replay replays m and turns a panic into an internal failure for the
// caller.
func (s *actorState) replay(ctx context.Context, m *pb.Replay) (rep *pb.Replayed, panicked any) {
	defer func() {
		if v := recover(); v != nil {
			panicked = v
			rep = &pb.Replayed{Failure: failureOf(fmt.Errorf("the executor panicked while replaying run %s: %v (a bug in agentos: please report it with this stack)\n%s", m.GetRunId(), v, debug.Stack()))}
		}
	}()
	opts := execclient.ReplayOptions{Patched: m.Patched, Sources: m.GetSources(), Limits: limitsFromPB(m.GetLimits()), MaxTimeout: durationNs(m.GetMaxTimeoutNs())}
	r, err := ReplayWith(ctx, s.ex, s.opts.Journal, m.GetRunId(), opts)
	if err != nil {
		return &pb.Replayed{Failure: failureOf(err)}, nil
	}
	return replayedOf(r), nil
}

// replayedOf is a ReplayReport as its wire message.
func replayedOf(r ReplayReport) *pb.Replayed {
	out := &pb.Replayed{Result: ranOf(r.Result, ""), Patched: r.Patched, Same: r.Same, Limits: limitsToPB(r.Limits),
		LimitsNote: r.LimitsNote, LimitHit: r.LimitHit, FromTree: r.FromTree, ModulesNote: r.ModulesNote}
	if d := r.Divergence; d != nil {
		out.Divergence = &pb.Divergence{Code: d.Code, RunId: d.RunID, Seq: d.Seq, Expected: d.Expected, Actual: d.Actual}
	}
	return out
}
