package supervisor

import (
	"fmt"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Strategy says which children a failure restarts.
type Strategy int

// The strategies.
const (
	OneForOne Strategy = iota
	OneForAll
	RestForOne
)

func (s Strategy) String() string {
	return [...]string{"one_for_one", "one_for_all", "rest_for_one"}[s]
}

// Restart says whether a child is restarted after it fails.
type Restart int

// The restart types.
const (
	// Permanent children are always restarted.
	Permanent Restart = iota
	// Transient children are restarted after a failure (a panic is never
	// a normal exit).
	Transient
	// Temporary children are never restarted: a failed one is stopped.
	Temporary
)

// Backoff delays restarts: the n-th consecutive restart within the period
// waits Initial × Factor^(n-1), capped at Max. The zero value restarts at
// once.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
	Factor  float64 // default 2
}

// Delay returns the wait before the n-th consecutive restart (n >= 1).
func (b Backoff) Delay(n int) time.Duration {
	if b.Initial <= 0 || n < 1 {
		return 0
	}
	f := b.Factor
	if f <= 1 {
		f = 2
	}
	d := float64(b.Initial) * math.Pow(f, float64(n-1))
	if b.Max > 0 && d > float64(b.Max) {
		return b.Max
	}
	return time.Duration(d)
}

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

// Action is what a supervisor did about a failure.
type Action string

// The actions.
const (
	ActionRestart  Action = "restart"
	ActionStop     Action = "stop"
	ActionEscalate Action = "escalate"
)

// Event is one supervision decision.
type Event struct {
	Failed   string   // the name of the child that failed
	Reason   string   // the failure (the panic value)
	Action   Action   // what was done
	Children []string // the children restarted or stopped, in start order
	Delay    time.Duration
	Restarts int // restarts within the period, this one included
}

func (s Spec) withDefaults() (Spec, error) {
	if s.Intensity <= 0 {
		s.Intensity = 3
	}
	if s.Period <= 0 {
		s.Period = 5 * time.Second
	}
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

// Window counts the restarts within the intensity period. The zero value is
// empty. Adding is amortized O(1) whatever the intensity: times arrive in
// order, so only the front expires.
type Window struct{ ts []time.Time }

// Add records a restart at now, forgets those older than period, and
// returns how many remain, this one included.
func (w *Window) Add(now time.Time, period time.Duration) int {
	i := 0
	for i < len(w.ts) && now.Sub(w.ts[i]) > period {
		i++
	}
	if i > 0 {
		w.ts = append(w.ts[:0], w.ts[i:]...)
	}
	w.ts = append(w.ts, now)
	return len(w.ts)
}

// Len returns the restarts in the window.
func (w *Window) Len() int { return len(w.ts) }

// Reset empties the window.
func (w *Window) Reset() { w.ts = w.ts[:0] }
