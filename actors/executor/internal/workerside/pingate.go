package workerside

import (
	"encoding/json"
	"sync"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// pinPlan, in a run frame, says that the run pins its reads of the tool
// tree in the worker (see pinGate); for a replayed or resumed run it also
// says which calls its recording holds.
type PinPlan struct {
	// Follows: the run follows a recording (a replay or a recovery), and
	// Held are the seqs the recording holds: those are answered as
	// recorded, never from a pin (a read the recording does not hold was
	// a pinned read when the run was recorded, or is past its end).
	Follows bool     `json:"follows,omitempty"`
	Held    []uint64 `json:"held,omitempty"`
}

// pinGate is a worker's side of its run's snapshot of the tool tree (see
// snapshot, which the parent keeps): the worker keeps the answers of the
// reads the parent marked pinnable (a reply frame's Pin) and answers a
// later read of the same request itself, sending nothing.
//
// IMPORTANT: which reads are answered here depends only on the run's call
// order, never on timing, so that replay pins the same reads:
//   - The run's fs calls (but list_files) pass through the gate one at a
//     time, in call order: while a read is at the parent, the fs calls
//     started after it wait for its answer (two reads of one file in a
//     Promise.all: the second is answered from the first one's pin). This
//     is the order in which the parent sees them, so its own snapshot
//     follows the same sequence.
//   - A write (any fs call but read_file and list_files) drops the pins
//     for every call after it: the run sees its own writes.
//   - A call its recording holds (Follows, Held) is never answered from a
//     pin; it is answered from the recording, as it was.
//
// A gate serves one run; a new run gets a new gate, so that a late answer
// of an ended run cannot touch the next one's.
type pinGate struct {
	mu       sync.Mutex
	on, off  bool // the run pins; a write started
	follows  bool
	held     map[uint64]struct{}
	vals     map[string]json.RawMessage // pinned answers, by request bytes
	busy     bool                       // a read is at the parent
	draining bool                       // a goroutine is running the queue
	queue    []gated
}

// gated is an fs call waiting at the gate: ask sends it on its way (the
// recording, the parent), done answers the tool.
type gated struct {
	call driver.Call
	ask  func(done func(val json.RawMessage, pin bool, err error))
	done func(json.RawMessage, error)
}

// newPinGate is the gate of a run with plan p (nil: the run does not pin).
func newPinGate(p *PinPlan) *pinGate {
	g := &pinGate{}
	if p == nil {
		return g
	}
	g.on, g.follows = true, p.Follows
	g.vals = map[string]json.RawMessage{}
	g.held = make(map[uint64]struct{}, len(p.Held))
	for _, s := range p.Held {
		g.held[s] = struct{}{}
	}
	return g
}

// gates reports whether c passes through the gate: an fs call (not
// list_files) of a run that pins, until a write was started and every
// call before it was sent.
func (g *pinGate) gates(c driver.Call) bool {
	if c.Driver != driver.FSDriver || c.Op == "list_files" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.on && (!g.off || g.busy || len(g.queue) > 0)
}

// instant is c's answer from a pin when the gate would give it at once: a
// read of a file pinned, no call waiting at the gate or at the parent
// before it, not one its recording holds (see decide). ok false: start c
// through the gate.
func (g *pinGate) instant(c driver.Call) (json.RawMessage, bool) {
	if c.Driver != driver.FSDriver || c.Op != "read_file" {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on || g.off || g.busy || g.draining || len(g.queue) > 0 {
		return nil, false
	}
	if _, has := g.held[c.Seq]; g.follows && has {
		return nil, false
	}
	v, ok := g.vals[string(c.Request)]
	return v, ok
}

// start queues q behind the gated calls started before it.
func (g *pinGate) start(q gated) {
	g.mu.Lock()
	g.queue = append(g.queue, q)
	g.mu.Unlock()
	g.drain()
}

// drain sends the queued calls in order until one is a read at the parent.
// One goroutine at a time runs it (draining), so that calls are sent in
// their order.
func (g *pinGate) drain() {
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		return
	}
	g.draining = true
	for !g.busy && len(g.queue) > 0 {
		q := g.queue[0]
		g.queue = g.queue[1:]
		val, pinned, read := g.decide(q.call)
		g.mu.Unlock()
		switch {
		case pinned:
			q.done(val, nil)
		case read:
			q.ask(g.answered(q))
		default:
			q.ask(func(v json.RawMessage, _ bool, err error) { q.done(v, err) })
		}
		g.mu.Lock()
	}
	g.draining = false
	g.mu.Unlock()
}

// decide, under g.mu, says how c is answered: from a pin, or asked (read:
// a read the gate waits for, whose answer may be pinned). A write drops
// the pins.
func (g *pinGate) decide(c driver.Call) (val json.RawMessage, pinned, read bool) {
	if c.Op != "read_file" {
		g.off, g.vals = true, nil
		return nil, false, false
	}
	if g.off {
		return nil, false, false
	}
	if _, has := g.held[c.Seq]; !g.follows || !has {
		if v, ok := g.vals[string(c.Request)]; ok {
			return v, true, false
		}
	}
	g.busy = true
	return nil, false, true
}

// answered is the answer of q, a read the gate waited for: kept if the
// parent marked it pinnable and no write came since, then given to the
// tool; the calls queued behind it go on.
func (g *pinGate) answered(q gated) func(json.RawMessage, bool, error) {
	return func(v json.RawMessage, pin bool, err error) {
		g.mu.Lock()
		if pin && err == nil && !g.off {
			g.vals[string(q.call.Request)] = v
		}
		g.busy = false
		g.mu.Unlock()
		q.done(v, err)
		g.drain()
	}
}
