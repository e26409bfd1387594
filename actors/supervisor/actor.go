package supervisor

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Props returns the props of a supervisor running spec. IMPORTANT: spawn
// each Props once: the returned props carry the supervisor's state (its
// ordered children and its restart history).
func Props(spec Spec) (*actor.Props, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &supervisor{spec: spec}
	return actor.PropsFromProducer(func() actor.Actor { return s }, actor.WithSupervisor(s)), nil
}

// supervisor is both the actor and its children's SupervisorStrategy.
// protoactor calls HandleFailure on the supervisor's own goroutine, the one
// that runs Receive, so the state needs no lock.
type supervisor struct {
	spec     Spec
	children []*child     // live children, in start order
	restarts []time.Time  // restarts within the period
	log      *slog.Logger // the actor system's logger
}

type child struct {
	spec ChildSpec
	pid  *actor.PID
}

// Receive is the supervisor's one message switch.
func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.onStarted(ctx)
	case *actor.Terminated:
		s.onTerminated(m)
	case *WhichChildren:
		s.onWhichChildren(ctx)
	case *actor.Stopping, *actor.Stopped, *actor.Restarting:
		// lifecycle: protoactor stops the children itself
	default:
		ctx.Logger().Warn("supervisor: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// onStarted spawns the children in spec order (again after a restart: the
// old ones were stopped with the supervisor).
func (s *supervisor) onStarted(ctx actor.Context) {
	s.log = ctx.Logger()
	s.children = s.children[:0]
	s.restarts = nil
	for _, cs := range s.spec.Children {
		pid, err := ctx.SpawnNamed(cs.Props, cs.Name)
		if err != nil {
			s.log.Error("supervisor: cannot start child", slog.String("child", cs.Name), slog.Any("err", err))
			continue
		}
		s.children = append(s.children, &child{spec: cs, pid: pid})
	}
}

// onTerminated drops a child that stopped.
func (s *supervisor) onTerminated(m *actor.Terminated) {
	for i, c := range s.children {
		if c.pid.Equal(m.Who) {
			s.children = append(s.children[:i], s.children[i+1:]...)
			return
		}
	}
}

func (s *supervisor) onWhichChildren(ctx actor.Context) {
	out := &Children{}
	for _, c := range s.children {
		out.Names = append(out.Names, c.spec.Name)
		out.PIDs = append(out.PIDs, c.pid)
	}
	ctx.Respond(out)
}

// HandleFailure implements actor.SupervisorStrategy for the children.
func (s *supervisor) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, pid *actor.PID, _ *actor.RestartStatistics, reason, message interface{}) {
	idx := -1
	for i, c := range s.children {
		if c.pid.Equal(pid) {
			idx = i
		}
	}
	if idx < 0 { // not one of ours (should not happen): restart it alone
		sup.RestartChildren(pid)
		return
	}
	failed := s.children[idx]
	ev := Event{Failed: failed.spec.Name, Reason: fmt.Sprint(reason)}
	if failed.spec.Restart == Temporary {
		ev.Action, ev.Children = ActionStop, []string{failed.spec.Name}
		s.emit(ev)
		sup.StopChildren(pid)
		return
	}
	now := time.Now()
	kept := s.restarts[:0]
	for _, t := range s.restarts {
		if now.Sub(t) <= s.spec.Period {
			kept = append(kept, t)
		}
	}
	s.restarts = append(kept, now)
	ev.Restarts = len(s.restarts)
	if len(s.restarts) > s.spec.Intensity {
		// Erlang semantics: too many restarts, the supervisor gives up and
		// its own supervisor decides.
		ev.Action = ActionEscalate
		s.emit(ev)
		s.restarts = nil
		sup.EscalateFailure(reason, message)
		return
	}
	var targets []*child
	switch s.spec.Strategy {
	case OneForOne:
		targets = []*child{failed}
	case OneForAll:
		targets = s.children
	case RestForOne:
		targets = s.children[idx:]
	}
	var restart, stop []*actor.PID
	for _, c := range targets {
		if c.spec.Restart == Temporary && c != failed {
			stop = append(stop, c.pid)
			continue
		}
		restart = append(restart, c.pid)
		ev.Children = append(ev.Children, c.spec.Name)
	}
	if len(stop) > 0 {
		sup.StopChildren(stop...)
	}
	ev.Action, ev.Delay = ActionRestart, s.spec.Backoff.Delay(len(s.restarts))
	s.emit(ev)
	if ev.Delay == 0 {
		sup.RestartChildren(restart...)
		return
	}
	// A failed child stays suspended until the restart; RestartChildren
	// only sends system messages, so calling it from the timer is safe.
	time.AfterFunc(ev.Delay, func() { sup.RestartChildren(restart...) })
}

func (s *supervisor) emit(ev Event) {
	if s.spec.OnEvent != nil {
		s.spec.OnEvent(ev)
	}
	if s.log != nil {
		s.log.Info("supervisor: child failed", slog.String("child", ev.Failed), slog.String("action", string(ev.Action)), slog.String("reason", ev.Reason), slog.Duration("delay", ev.Delay))
	}
}
