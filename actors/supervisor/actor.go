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
	s := &supervisor{spec: spec, engine: NewEngine(spec.policy(), nil)}
	return actor.PropsFromProducer(func() actor.Actor { return s }, actor.WithSupervisor(s)), nil
}

// supervisor is both the actor and its children's SupervisorStrategy.
// protoactor calls HandleFailure on the supervisor's own goroutine, the one
// that runs Receive, so the state needs no lock. The decisions are the
// Engine's; the supervisor carries them out with protoactor's restart and
// stop.
type supervisor struct {
	spec Spec
	// children are the live children, in start order; engine holds them
	// at the same indexes.
	children []*liveChild
	engine   *Engine
	log      *slog.Logger // the actor system's logger
	self     *actor.PID
	// gen counts the supervisor's incarnations (one per Started): a
	// delayed restart decided by an earlier one is dropped.
	gen int
	// stopping is set from the supervisor's own Stopping or Restarting
	// until its next Started: its children are being stopped, and a
	// failure that arrives meanwhile MUST NOT restart one, because
	// protoactor's Restart resurrects an actor that already processed its
	// Stop (it runs Started again outside the registry and the tree).
	stopping bool
}

// restartDue is sent by a Backoff timer to the supervisor itself, so that
// the delayed restart runs on the supervisor's goroutine, where gen and
// stopping can be checked. Internal: never sent by anyone else.
type restartDue struct {
	gen  int
	sup  actor.Supervisor
	pids []*actor.PID
}

type liveChild struct {
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
	case *restartDue:
		s.onRestartDue(m)
	case *actor.Stopping, *actor.Restarting:
		// protoactor stops the children itself, right after this
		s.stopping = true
	case *actor.Stopped:
		// lifecycle: nothing left to do
	default:
		ctx.Logger().Warn("supervisor: unknown message", slog.String("type", fmt.Sprintf("%T", m)))
	}
}

// onStarted spawns the children in spec order (again after a restart: the
// old ones were stopped with the supervisor).
func (s *supervisor) onStarted(ctx actor.Context) {
	s.log = ctx.Logger()
	s.self = ctx.Self()
	s.gen++
	s.stopping = false
	s.children = s.children[:0]
	kids := make([]Child, 0, len(s.spec.Children))
	for _, cs := range s.spec.Children {
		pid, err := ctx.SpawnNamed(cs.Props, cs.Name)
		if err != nil {
			s.log.Error("supervisor: cannot start child", slog.String("child", cs.Name), slog.Any("err", err))
			continue
		}
		s.children = append(s.children, &liveChild{spec: cs, pid: pid})
		kids = append(kids, Child{Name: cs.Name, Restart: cs.Restart})
	}
	s.engine.Reset(kids)
}

// onTerminated drops a child that stopped.
func (s *supervisor) onTerminated(m *actor.Terminated) {
	for i, c := range s.children {
		if c.pid.Equal(m.Who) {
			s.children = append(s.children[:i], s.children[i+1:]...)
			s.engine.Remove(i)
			return
		}
	}
}

// onRestartDue runs a Backoff restart, unless the supervisor has stopped or
// restarted its children since it was decided.
func (s *supervisor) onRestartDue(m *restartDue) {
	if m.gen != s.gen || s.stopping {
		return
	}
	var live []*actor.PID
	for _, pid := range m.pids {
		for _, c := range s.children {
			if c.pid.Equal(pid) {
				live = append(live, pid)
			}
		}
	}
	m.sup.RestartChildren(live...)
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
func (s *supervisor) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, pid *actor.PID, _ *actor.RestartStatistics, reason, message interface{}) {
	if s.stopping {
		// The child already has its Stop; a Restart behind it would
		// resurrect it.
		s.emit(Event{Failed: s.nameOf(pid), Reason: fmt.Sprint(reason), Action: ActionStop, Children: []string{s.nameOf(pid)}})
		sup.StopChildren(pid)
		return
	}
	idx := s.indexOf(pid)
	if idx < 0 { // not one of ours (should not happen): restart it alone
		sup.RestartChildren(pid)
		return
	}
	// A panic is never a normal exit.
	d := s.engine.Ended(idx, fmt.Sprint(reason), false, time.Now())
	switch d.Action {
	case ActionStop:
		s.emit(d.Event)
		sup.StopChildren(pid)
		return
	case ActionEscalate:
		s.emit(d.Event)
		sup.EscalateFailure(reason, message)
		return
	}
	if len(d.Stop) > 0 {
		stop := make([]*actor.PID, len(d.Stop))
		for k, j := range d.Stop {
			stop[k] = s.children[j].pid
		}
		sup.StopChildren(stop...)
	}
	restart := make([]*actor.PID, len(d.Restart))
	for k, j := range d.Restart {
		restart[k] = s.children[j].pid
	}
	s.emit(d.Event)
	if d.Delay == 0 {
		sup.RestartChildren(restart...)
		return
	}
	// A failed child stays suspended until the restart. The timer does
	// not restart it itself: it asks the supervisor, which drops the
	// restart if it has stopped or restarted its children meanwhile
	// (children come back under the same names, so a stale restart would
	// hit a new child that never failed).
	due := &restartDue{gen: s.gen, sup: sup, pids: restart}
	self := s.self
	time.AfterFunc(d.Delay, func() { sys.Root.Send(self, due) })
}

// indexOf returns the index of a live child, or -1.
func (s *supervisor) indexOf(pid *actor.PID) int {
	for i, c := range s.children {
		if c.pid.Equal(pid) {
			return i
		}
	}
	return -1
}

// nameOf returns the spec name of a child, or its PID when it is not one of
// the live children.
func (s *supervisor) nameOf(pid *actor.PID) string {
	if i := s.indexOf(pid); i >= 0 {
		return s.children[i].spec.Name
	}
	return pid.String()
}

func (s *supervisor) emit(ev Event) {
	if s.spec.OnEvent != nil {
		s.spec.OnEvent(ev)
	}
	if s.log != nil {
		s.log.Info("supervisor: child failed", slog.String("child", ev.Failed), slog.String("action", string(ev.Action)), slog.String("reason", ev.Reason), slog.Duration("delay", ev.Delay))
	}
}
