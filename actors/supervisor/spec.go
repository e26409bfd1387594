package supervisor

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ChildSpec describes one child.
type ChildSpec struct {
	Name    string
	Props   *actor.Props
	Restart Restart
}

// Spec is a supervisor, as data.
type Spec struct {
	Strategy Strategy
	// Intensity is the most restarts allowed within Period before the
	// supervisor gives up and escalates. Default 3 in 5 s.
	Intensity int
	Period    time.Duration
	Backoff   Backoff
	Children  []ChildSpec
	// OnEvent, when set, receives every supervision decision. It is called
	// on the supervisor's goroutine and MUST NOT block.
	OnEvent func(Event)
}

// policy returns the spec's decision parameters, for the Engine.
func (s Spec) policy() Policy {
	return Policy{Strategy: s.Strategy, Intensity: s.Intensity, Period: s.Period, Backoff: s.Backoff}
}

func (s Spec) withDefaults() (Spec, error) {
	p := s.policy().WithDefaults()
	s.Intensity, s.Period = p.Intensity, p.Period
	seen := map[string]bool{}
	for _, c := range s.Children {
		if c.Name == "" || c.Props == nil {
			return s, fmt.Errorf("supervisor: every child needs a name and props")
		}
		if seen[c.Name] {
			return s, fmt.Errorf("supervisor: two children are named %q", c.Name)
		}
		seen[c.Name] = true
	}
	return s, nil
}
