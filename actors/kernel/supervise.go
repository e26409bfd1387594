package kernel

import (
	"context"
	"fmt"
	"slices"
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
func Supervise(spec SupervisorSpec) Main {
	if spec.Intensity <= 0 {
		spec.Intensity = 3
	}
	if spec.Period <= 0 {
		spec.Period = 5 * time.Second
	}
	return func(ctx context.Context, p *Process) error {
		s := &procSupervisor{spec: spec, p: p, pids: make([]PID, len(spec.Children)), byPID: map[PID]int{}, ignore: map[PID]bool{}}
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
	spec     SupervisorSpec
	p        *Process
	pids     []PID // by child index; 0 when not running
	byPID    map[PID]int
	ignore   map[PID]bool // children the supervisor stopped itself
	restarts supervisor.Window
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
	ev := supervisor.Event{Failed: c.Name, Reason: d.Reason.String()}
	if c.Restart == supervisor.Temporary || (c.Restart == supervisor.Transient && d.Reason.Kind == Normal) {
		ev.Action, ev.Children = supervisor.ActionStop, []string{c.Name}
		s.emit(ev)
		return nil
	}
	ev.Restarts = s.restarts.Add(time.Now(), s.spec.Period)
	if ev.Restarts > s.spec.Intensity {
		ev.Action = supervisor.ActionEscalate
		s.emit(ev)
		return Exit(Reason{Kind: Fault, Detail: fmt.Sprintf("supervisor: %d restarts within %s (child %q: %s)", ev.Restarts, s.spec.Period, c.Name, d.Reason)})
	}
	var targets []int
	switch s.spec.Strategy {
	case supervisor.OneForOne:
		targets = []int{i}
	case supervisor.OneForAll:
		for j := range s.spec.Children {
			targets = append(targets, j)
		}
	case supervisor.RestForOne:
		for j := i; j < len(s.spec.Children); j++ {
			targets = append(targets, j)
		}
	}
	for _, j := range slices.Backward(targets) {
		if j != i {
			s.stop(j, "restarting with "+c.Name)
		}
	}
	ev.Action, ev.Delay = supervisor.ActionRestart, s.spec.Backoff.Delay(ev.Restarts)
	for _, j := range targets {
		if j == i || s.spec.Children[j].Restart != supervisor.Temporary {
			ev.Children = append(ev.Children, s.spec.Children[j].Name)
		}
	}
	s.emit(ev)
	if ev.Delay > 0 {
		t := time.NewTimer(ev.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
	for _, j := range targets {
		if j != i && s.spec.Children[j].Restart == supervisor.Temporary {
			continue // a temporary sibling stopped with the others is dropped
		}
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
