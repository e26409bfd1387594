package executor

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/journal"
	"github.com/asynkron/protoactor-go/actor"
)

// Props returns the props of an executor actor running tools on ex and
// recording them in j (nil: runs are never recorded). The actor does not own
// ex or j: whoever created them closes them, after stopping the actor.
//
// Runs execute on their own goroutines, so the actor's mailbox never waits
// for a tool; a restart of the actor (its supervisor's decision after a
// panic) leaves the runs in flight untouched. Stopping the actor cancels
// them and waits for their replies.
func Props(ex *Executor, j *journal.Journal) *actor.Props {
	s := &actorState{ex: ex, j: j}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return actor.PropsFromProducer(func() actor.Actor { return &execActor{s: s} })
}

// actorState outlives restarts of the actor.
type actorState struct {
	ex     *Executor
	j      *journal.Journal
	ctx    context.Context // cancelled when the actor stops for good
	cancel context.CancelFunc
	runs   sync.WaitGroup
}

type execActor struct{ s *actorState }

// Receive is the executor actor's one message switch.
func (a *execActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Run:
		a.onRun(ctx, m)
	case *runPanicked:
		panic(fmt.Sprintf("executor: a run panicked: %v", m.value))
	case *actor.Stopping:
		a.onStopping()
	case *actor.Started, *actor.Stopped, *actor.Restarting:
	default:
		ctx.Logger().Warn("executor: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// onRun starts the run on its own goroutine; the reply goes straight to the
// sender from there.
func (a *execActor) onRun(ctx actor.Context, m *Run) {
	sender, self, sys := ctx.Sender(), ctx.Self(), ctx.ActorSystem()
	if sender == nil {
		ctx.Logger().Warn("executor: Run without a sender; use Request or RequestFuture")
		return
	}
	s := a.s
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		runCtx := m.Ctx
		if runCtx == nil {
			runCtx = context.Background()
		}
		runCtx, stop := context.WithCancel(runCtx)
		defer stop()
		unhook := context.AfterFunc(s.ctx, stop)
		defer unhook()
		reply := s.run(runCtx, m)
		if reply.panicked != nil {
			sys.Root.Send(self, &runPanicked{value: reply.panicked})
		}
		sys.Root.Send(sender, &reply.Ran)
	}()
}

type runReply struct {
	Ran
	panicked any
}

// run runs m and turns a panic into an internal error for the caller.
func (s *actorState) run(ctx context.Context, m *Run) (r runReply) {
	defer func() {
		if v := recover(); v != nil {
			r.panicked = v
			r.Result = Result{Error: &Error{Kind: sandbox.KindInternal, Message: fmt.Sprintf("the executor panicked while running %s: %v (a bug in agentos: please report it with this stack)\n%s", m.Request.Path, v, debug.Stack())}}
		}
	}()
	j := s.j
	if !m.Record {
		j = nil
	}
	r.Result, r.RunID, r.Err, r.panicked = record(ctx, s.ex, j, m.Request)
	return r
}

// onStopping cancels every run in flight and waits for their replies.
func (a *execActor) onStopping() {
	a.s.cancel()
	a.s.runs.Wait()
}
