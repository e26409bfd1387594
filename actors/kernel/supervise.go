package kernel

import (
	"context"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/actors/supervisor"
)

// ChildSpec is one child of a supervisor process.
type ChildSpec struct {
	// Name identifies the child in events; it is the child's Image unless
	// Options.Image is set.
	Name string
	Main Main
	// Options spawn the child (Link is always set: the supervisor traps
	// exits). Grants MUST be a subset of the supervisor's.
	Options SpawnOptions
	Restart supervisor.Restart
}

// SupervisorSpec is a supervisor process, as data: the same strategies,
// restart intensity and backoff as actors/supervisor, for agent processes.
type SupervisorSpec struct {
	Strategy supervisor.Strategy
	// Intensity is the most restarts allowed within Period; one more and
	// the supervisor ends with a fault (its own supervisor decides next).
	// Default 3 in 5 s.
	Intensity int
	Period    time.Duration
	Backoff   supervisor.Backoff
	Children  []ChildSpec
	// OnEvent, when set, receives every decision, on the supervisor's
	// goroutine; it MUST NOT block.
	OnEvent func(supervisor.Event)
}

// Supervise returns the Main of a supervisor process running spec. Spawn it
// with the spawn right (and the rights its children need). It starts the
// children in order, linked; when one ends it restarts what the strategy
// says (Permanent children always, Transient ones after an abnormal exit,
// Temporary ones never), waiting Backoff between consecutive restarts. A
// *Term stops the children and ends the supervisor normally; when the
// supervisor ends any other way, its links end the children. Although it
// traps exits, a supervisor ends (after its children) when its parent ends,
// or another linked process ends abnormally.
//
// The decisions (which children, restart types, intensity, backoff, the
// Event) are supervisor.Engine's, the same engine as the protoactor
// supervisor's; Supervise carries them out with kernel kills and spawns.
func Supervise(spec SupervisorSpec) Main {
	policy := supervisor.Policy{Strategy: spec.Strategy, Intensity: spec.Intensity, Period: spec.Period, Backoff: spec.Backoff}.WithDefaults()
	spec.Intensity, spec.Period = policy.Intensity, policy.Period
	kids := make([]supervisor.Child, len(spec.Children))
	for i, c := range spec.Children {
		kids[i] = supervisor.Child{Name: c.Name, Restart: c.Restart}
	}
	return func(ctx context.Context, p *Process) error {
		s := &procSupervisor{spec: spec, p: p, pids: make([]PID, len(spec.Children)), byPID: map[PID]int{}, ignore: map[PID]bool{},
			engine: supervisor.NewEngine(policy, kids)}
		p.TrapExits(true)
		for i := range spec.Children {
			if err := s.start(i); err != nil {
				return err
			}
		}
		for {
			m, err := p.Recv(ctx)
			if err != nil {
				return nil // the supervisor is ending; its links end the children
			}
			switch b := m.Body.(type) {
			case *Term:
				for i := len(s.pids) - 1; i >= 0; i-- {
					s.stop(i, "supervisor terminated")
				}
				return nil
			case *Down:
				if _, child := s.byPID[b.PID]; !child && !s.ignore[b.PID] && b.Link && (b.PID == p.Parent() || b.Reason.Kind != Normal) {
					// Trapping exits must not make the supervisor outlive its
					// parent (or another linked process that failed): end
					// the children, then itself, as the link would have.
					for i := len(s.pids) - 1; i >= 0; i-- {
						s.stop(i, "supervisor ending: "+b.Reason.String())
					}
					return Exit(Reason{Kind: Killed, Detail: fmt.Sprintf("linked process %v ended (%s)", b.PID, b.Reason)})
				}
				if err := s.onDown(ctx, b); err != nil {
					return err
				}
			}
		}
	}
}

type procSupervisor struct {
	spec   SupervisorSpec
	p      *Process
	pids   []PID // by child index; 0 when not running
	byPID  map[PID]int
	ignore map[PID]bool // children the supervisor stopped itself
	engine *supervisor.Engine
}

func (s *procSupervisor) start(i int) error {
	c := s.spec.Children[i]
	opts := c.Options
	opts.Link = true
	if opts.Image == "" {
		opts.Image = c.Name
	}
	child, err := s.p.Spawn(c.Main, opts)
	if err != nil {
		return fmt.Errorf("supervisor: starting child %q: %w", c.Name, err)
	}
	s.pids[i] = child.PID()
	s.byPID[child.PID()] = i
	return nil
}

func (s *procSupervisor) stop(i int, why string) {
	pid := s.pids[i]
	if pid == 0 {
		return
	}
	s.ignore[pid] = true
	delete(s.byPID, pid)
	s.pids[i] = 0
	_ = s.p.k.Kill(pid, fmt.Sprintf("supervisor %v: %s", s.p.pid, why))
}

func (s *procSupervisor) onDown(ctx context.Context, d *Down) error {
	if s.ignore[d.PID] {
		delete(s.ignore, d.PID)
		return nil
	}
	i, ok := s.byPID[d.PID]
	if !ok {
		return nil
	}
	delete(s.byPID, d.PID)
	s.pids[i] = 0
	c := s.spec.Children[i]
	dec := s.engine.Ended(i, d.Reason.String(), d.Reason.Kind == Normal, time.Now())
	switch dec.Action {
	case supervisor.ActionStop:
		s.emit(dec.Event)
		return nil
	case supervisor.ActionEscalate:
		s.emit(dec.Event)
		return Exit(Reason{Kind: Fault, Detail: fmt.Sprintf("supervisor: %d restarts within %s (child %q: %s)", dec.Event.Restarts, s.spec.Period, c.Name, d.Reason)})
	}
	// A kernel restart is a kill and a spawn: kill the rest of the group
	// (the restarted siblings and the dropped temporary ones; the failed
	// child has ended already) in reverse start order, wait, then spawn
	// the restarted ones in start order.
	for r, t := len(dec.Restart)-1, len(dec.Stop)-1; r >= 0 || t >= 0; {
		if t < 0 || (r >= 0 && dec.Restart[r] > dec.Stop[t]) {
			if dec.Restart[r] != i {
				s.stop(dec.Restart[r], "restarting with "+c.Name)
			}
			r--
		} else {
			s.stop(dec.Stop[t], "restarting with "+c.Name)
			t--
		}
	}
	s.emit(dec.Event)
	if dec.Delay > 0 {
		t := time.NewTimer(dec.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
	for _, j := range dec.Restart {
		if err := s.start(j); err != nil {
			return err
		}
	}
	return nil
}

func (s *procSupervisor) emit(ev supervisor.Event) {
	if s.spec.OnEvent != nil {
		s.spec.OnEvent(ev)
	}
	s.p.k.emit(&Event{Kind: EventRestart, PID: s.p.pid, Name: ev.Failed, Reason: ev.Reason, Detail: fmt.Sprintf("%s %v", ev.Action, ev.Children)})
}
