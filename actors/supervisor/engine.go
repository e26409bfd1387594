package supervisor

import (
	"math"
	"time"
)

// This file is the one supervision engine: the decisions shared by the
// protoactor supervisor actor (actor.go) and the kernel's supervisor
// processes (actors/kernel Supervise). It is pure: no actor, no process,
// no goroutine, no clock of its own. Each driver feeds it "child i ended
// with this reason at this time" and carries out the Decision it answers
// with its own mechanics (protoactor restart/stop, or kernel kill/spawn).

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

// Policy is what an Engine decides with: the strategy, the restart
// intensity (at most Intensity restarts within Period; zero values mean 3
// in 5 s) and the backoff between consecutive restarts.
type Policy struct {
	Strategy  Strategy
	Intensity int
	Period    time.Duration
	Backoff   Backoff
}

// WithDefaults returns p with the zero Intensity and Period replaced by
// the defaults (3 restarts in 5 s).
func (p Policy) WithDefaults() Policy {
	if p.Intensity <= 0 {
		p.Intensity = 3
	}
	if p.Period <= 0 {
		p.Period = 5 * time.Second
	}
	return p
}

// Child is one supervised child as the Engine sees it: a name for events
// and its restart type.
type Child struct {
	Name    string
	Restart Restart
}

// Decision is the Engine's answer to a child's end. The driver carries it
// out in this order: stop the children of Stop (and, if its restart is a
// stop and a start, the running children of Restart other than the failed
// one), wait Delay, start the children of Restart in the order given. On
// ActionEscalate it gives up: the supervisor ends or escalates to its own
// supervisor. Event is the decision to report, once, as it is.
type Decision struct {
	Action Action
	// Restart holds the indexes of the children to start again, in start
	// order, the failed child included. Empty unless Action is
	// ActionRestart. IMPORTANT: Restart and Stop are the engine's own
	// buffers, valid until its next call to Ended (a restart allocates
	// none); Event is the caller's to keep.
	Restart []int
	// Stop holds the indexes of the running temporary siblings the
	// strategy takes down with the failed child: they are stopped and not
	// started again. Nil unless Action is ActionRestart and there are some.
	Stop  []int
	Delay time.Duration
	Event Event
}

// Engine is the decision logic of one supervisor: strategy, restart types,
// intensity within a period and exponential backoff over an ordered list
// of children, each running or not. It keeps the restart window and which
// children run, nothing else.
//
// IMPORTANT: an Engine is not safe for concurrent use: a supervisor MUST
// call it from the one goroutine that handles its children's ends (the
// actor's, or the supervisor process's).
type Engine struct {
	policy   Policy
	children []Child
	running  []bool
	window   Window
	// restart and stop are the buffers of Decision.Restart and .Stop.
	restart, stop []int
}

// NewEngine returns an engine for policy (defaults applied) over children,
// in start order, all of them running.
func NewEngine(policy Policy, children []Child) *Engine {
	e := &Engine{policy: policy.WithDefaults()}
	e.Reset(children)
	return e
}

// Policy returns the engine's policy, defaults applied.
func (e *Engine) Policy() Policy { return e.policy }

// Reset replaces the children (in start order, all running) and empties
// the restart window: the supervisor has started afresh.
func (e *Engine) Reset(children []Child) {
	e.children = append(e.children[:0], children...)
	e.running = e.running[:0]
	for range children {
		e.running = append(e.running, true)
	}
	e.window.Reset()
}

// Len returns the number of children.
func (e *Engine) Len() int { return len(e.children) }

// Child returns child i.
func (e *Engine) Child(i int) Child { return e.children[i] }

// Running reports whether child i runs, as far as the engine knows: it was
// started (or restarted by a Decision) and has not ended or been stopped
// by one since.
func (e *Engine) Running(i int) bool { return e.running[i] }

// Remove drops child i from the list: the children after it move down by
// one. A driver whose children can leave for good (a protoactor child that
// stopped) calls it; the kernel's keeps every child of its spec.
func (e *Engine) Remove(i int) {
	e.children = append(e.children[:i], e.children[i+1:]...)
	e.running = append(e.running[:i], e.running[i+1:]...)
}

// Ended records that child i ended at now, for reason (the text of the
// events), normally (returned, stopped itself) or not (failed, panicked,
// was killed), and answers what to do:
//
//   - a Temporary child, or a Transient one that ended normally, is not
//     restarted: ActionStop, nothing else to do, and the restart window is
//     unchanged;
//   - otherwise the restart counts in the window: one more than Intensity
//     within Period and the supervisor gives up, ActionEscalate (the
//     window is emptied);
//   - otherwise ActionRestart: the strategy's group (the failed child
//     alone, every child, or the failed child and those after it) is
//     restarted after Backoff.Delay(restarts within the period), except
//     its Temporary siblings, which are stopped for good.
//
// Event.Children names the children restarted (ActionRestart) or the one
// stopped (ActionStop).
func (e *Engine) Ended(i int, reason string, normal bool, now time.Time) Decision {
	c := e.children[i]
	e.running[i] = false
	d := Decision{Event: Event{Failed: c.Name, Reason: reason}}
	if c.Restart == Temporary || (c.Restart == Transient && normal) {
		d.Action, d.Event.Action, d.Event.Children = ActionStop, ActionStop, []string{c.Name}
		return d
	}
	d.Event.Restarts = e.window.Add(now, e.policy.Period)
	if d.Event.Restarts > e.policy.Intensity {
		// Erlang semantics: too many restarts, the supervisor gives up and
		// its own supervisor decides.
		d.Action, d.Event.Action = ActionEscalate, ActionEscalate
		e.window.Reset()
		return d
	}
	first, last := i, i+1
	switch e.policy.Strategy {
	case OneForAll:
		first, last = 0, len(e.children)
	case RestForOne:
		last = len(e.children)
	}
	e.restart, e.stop = e.restart[:0], e.stop[:0]
	d.Event.Children = make([]string, 0, last-first)
	for j := first; j < last; j++ {
		if j != i && e.children[j].Restart == Temporary {
			if e.running[j] {
				e.stop = append(e.stop, j)
				e.running[j] = false
			}
			continue
		}
		e.restart = append(e.restart, j)
		d.Event.Children = append(d.Event.Children, e.children[j].Name)
		e.running[j] = true
	}
	d.Restart = e.restart
	if len(e.stop) > 0 {
		d.Stop = e.stop
	}
	d.Delay = e.policy.Backoff.Delay(d.Event.Restarts)
	d.Action, d.Event.Action, d.Event.Delay = ActionRestart, ActionRestart, d.Delay
	return d
}
