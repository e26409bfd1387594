package kernel

import (
	"sync"
	"time"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/internal/clip"
)

// EventKind names a kernel event; the values are stable strings (the
// kernel client's type).
type EventKind = kernelclient.EventKind

// The kernel events.
const (
	EventSpawn    = kernelclient.EventSpawn    // a process started
	EventExit     = kernelclient.EventExit     // a process ended; Reason says why
	EventSignal   = kernelclient.EventSignal   // kill, term, stop or cont (Detail)
	EventRegister = kernelclient.EventRegister // a process took a name
	EventCharge   = kernelclient.EventCharge   // Amount of Meter charged to PID
	EventRefused  = kernelclient.EventRefused  // a capability check failed; Detail says which right
	EventRestart  = kernelclient.EventRestart  // a supervisor restarted a child (Name)
	EventSnapshot = kernelclient.EventSnapshot // a snapshot of PID was taken; Detail is its id
	EventRestore  = kernelclient.EventRestore  // PID was restored from a snapshot; Detail is its id or the snapshot's pid
)

// Event is one entry of the kernel's recent-events log (the kernel
// client's type).
type Event = kernelclient.Event

// eventLog is a ring of the most recent events.
type eventLog struct {
	mu   sync.Mutex
	ring []Event
	seq  uint64
}

func newEventLog(n int) *eventLog { return &eventLog{ring: make([]Event, n)} }

// add numbers e and keeps a copy.
func (l *eventLog) add(e *Event) {
	l.mu.Lock()
	l.seq++
	e.Seq = l.seq
	l.ring[(l.seq-1)%uint64(len(l.ring))] = *e
	l.mu.Unlock()
}

// since returns the kept events with Seq > after, oldest first, at most n
// (n <= 0: all kept).
func (l *eventLog) since(after uint64, n int) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := uint64(len(l.ring))
	first := uint64(1)
	if l.seq > size {
		first = l.seq - size + 1
	}
	if after+1 > first {
		first = after + 1
	}
	if n > 0 && l.seq >= first && l.seq-first+1 > uint64(n) {
		first = l.seq - uint64(n) + 1
	}
	var out []Event
	for s := first; s <= l.seq; s++ {
		out = append(out, l.ring[(s-1)%size])
	}
	return out
}

// emit stamps, keeps and publishes e. Events go by pointer down the calls
// and are copied only into the ring and the subscribers: a process's exit
// runs on its own small goroutine stack, and Event values copied at every
// call made that stack grow (a fifth of a spawn+exit's time). Subscribers
// take values, so the Event never escapes to the heap.
func (k *Kernel) emit(e *Event) { k.emitAt(k.now(), e) }

// emitAt is emit with the time already read.
func (k *Kernel) emitAt(t time.Time, e *Event) {
	e.Time = t
	// The ring keeps what callers chose (a refused path, a fault's error,
	// a name): never more than a clipped prefix of it.
	e.Name, e.Reason, e.Detail = clip.Text(e.Name), clip.Text(e.Reason), clip.Text(e.Detail)
	k.events.add(e)
	if k.opts.OnEvent != nil {
		k.opts.OnEvent(*e)
	}
	if hs := k.hooks.Load(); hs != nil {
		for _, h := range *hs {
			h(*e)
		}
	}
}

// Events returns the most recent kernel events with Seq > after, oldest
// first, at most n (n <= 0: every event still kept).
func (k *Kernel) Events(after uint64, n int) []Event { return k.events.since(after, n) }

// Emit records an event from outside the process table (a supervisor's
// restart, a kernel tool call).
func (k *Kernel) Emit(e Event) { k.emit(&e) }
