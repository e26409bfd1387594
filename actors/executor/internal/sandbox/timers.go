package sandbox

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"math"

	"github.com/dop251/goja"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// Timers. setTimeout, setInterval, clearTimeout and clearInterval run on the
// journaled clock, never on the host's own time, so that a replay fires the
// same timers in the same order and reads the same Date values:
//
//   - a timer's due time is the clock as last read (by Date, or by the last
//     timer wait) plus its delay, like Node's cached loop time; the first
//     timer of a run reads the clock (one clock.now call) if nothing has;
//   - the run's loop fires, in (due, creation) order, the timers due by the
//     clock as last read; then delivers the oldest bridge call in flight;
//     then, when only timers are left, waits for the next one with one
//     clock.sleep call (a driver call: journaled, and answered at once on
//     replay) and fires what is due by the time it answers;
//   - IMPORTANT: so a timer never fires while the tool waits on a bridge
//     call it issued earlier (unless the timer was due already): the order
//     in which a call's answer and a timer arrive would otherwise depend on
//     the host's timing, which a replay cannot reproduce. The run's timeout
//     bounds a call;
//   - timers keep the run alive after the default export has returned (or
//     its promise settled) until they fire or are cleared; the run's
//     timeout still applies, and a run that times out with timers pending
//     says so.

// MaxTimerDelay is the largest delay a timer takes, as in browsers and
// Node; a larger one (or NaN, or below 1) becomes 1 ms.
const MaxTimerDelay = math.MaxInt32

// TimerGlobals are the timer functions the sandbox defines.
var TimerGlobals = []string{"setTimeout", "clearTimeout", "setInterval", "clearInterval"}

type timer struct {
	id       int64
	due      int64 // Unix ms on the journaled clock
	seq      uint64
	fn       goja.Callable
	args     []goja.Value
	interval int64 // ms; 0 for a timeout
	index    int   // in the heap; -1 when cleared or fired
}

// timerHeap orders timers by due time, then creation.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].due < h[j].due || h[i].due == h[j].due && h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *timerHeap) Push(x any)   { t := x.(*timer); t.index = len(*h); *h = append(*h, t) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// timers is a run's timer state; it is used on the run's goroutine only.
type timers struct {
	heap    timerHeap
	byID    map[int64]*timer
	nextID  int64
	seq     uint64
	now     int64 // the journaled clock as last read, Unix ms
	haveNow bool
}

func (r *run) setTimer(c goja.FunctionCall, repeat bool) goja.Value {
	name := "setTimeout"
	if repeat {
		name = "setInterval"
	}
	fn, ok := goja.AssertFunction(c.Argument(0))
	if !ok {
		panic(r.vm.NewTypeError(name + ": the first argument must be a function (a string of code is not run: eval is disabled in the sandbox)"))
	}
	delay := c.Argument(1).ToFloat()
	if math.IsNaN(delay) || delay < 1 || delay > MaxTimerDelay {
		delay = 1
	}
	var args []goja.Value
	if len(c.Arguments) > 2 {
		args = append(args, c.Arguments[2:]...)
	}
	ts := &r.timers
	if !ts.haveNow {
		r.now() // sets ts.now; a failure aborts the run
	}
	if ts.byID == nil {
		ts.byID = map[int64]*timer{}
	}
	ts.nextID++
	ts.seq++
	t := &timer{id: ts.nextID, due: ts.now + int64(delay), seq: ts.seq, fn: fn, args: args}
	if repeat {
		t.interval = int64(delay)
	}
	ts.byID[t.id] = t
	heap.Push(&ts.heap, t)
	return r.vm.ToValue(t.id)
}

func (r *run) clearTimer(c goja.FunctionCall) goja.Value {
	ts := &r.timers
	id := c.Argument(0).ToInteger()
	if t, ok := ts.byID[id]; ok {
		delete(ts.byID, id)
		if t.index >= 0 {
			heap.Remove(&ts.heap, t.index)
		}
	}
	return goja.Undefined()
}

// pendingTimers is how many timers may still fire.
func (r *run) pendingTimers() int { return len(r.timers.heap) }

// fireDue runs the first timer due by the clock as last read, if any, and
// reports whether it ran one.
func (r *run) fireDue() (bool, error) {
	ts := &r.timers
	if len(ts.heap) == 0 || ts.heap[0].due > ts.now {
		return false, nil
	}
	t := heap.Pop(&ts.heap).(*timer)
	if t.interval > 0 {
		t.due = ts.now + t.interval
		ts.seq++
		t.seq = ts.seq
		heap.Push(&ts.heap, t)
	} else {
		delete(ts.byID, t.id)
	}
	_, err := t.fn(goja.Undefined(), t.args...)
	return true, err
}

// sleepUntilNextTimer waits, through the clock device, until the next timer
// is due, and advances the run's clock to the time it answers.
func (r *run) sleepUntilNextTimer() error {
	due := r.timers.heap[0].due
	call := driver.Call{Seq: r.seq.Add(1), Driver: driver.ClockDriver, Op: "sleep", Request: json.RawMessage(fmt.Sprintf(`{"until":%d}`, due))}
	ch := make(chan callResult, 1)
	r.calls.Add(1)
	go func() {
		defer r.calls.Done()
		val, err := r.do(call)
		ch <- callResult{val, err}
	}()
	var res callResult
	select {
	case res = <-ch:
	case <-r.stop:
		return r.reason.Load()
	}
	if res.err != nil {
		e := driver.AsError(res.err)
		return &Error{Kind: KindHostFailure, Message: fmt.Sprintf("clock.sleep (waiting for a timer): %s", e.Message), Code: e.Code}
	}
	var ms int64
	if err := json.Unmarshal(res.val, &ms); err != nil {
		return errorf(KindHostFailure, "clock.sleep answered %s, not Unix milliseconds", res.val)
	}
	r.timers.now, r.timers.haveNow = max(ms, r.timers.now), true
	return nil
}

// timersNote says, on a run that timed out, which timers kept it alive.
func (r *run) timersNote(e *Error) {
	n := r.pendingTimers()
	if e.Kind != KindTimeout || n == 0 {
		return
	}
	intervals := 0
	for _, t := range r.timers.heap {
		if t.interval > 0 {
			intervals++
		}
	}
	switch {
	case intervals > 0:
		e.Message += fmt.Sprintf("; %d interval(s) still running kept it alive (a setInterval that is never cleared runs until the timeout: call clearInterval when done)", intervals)
	default:
		e.Message += fmt.Sprintf("; %d timer(s) were still pending (timers keep a run alive until they fire or are cleared)", n)
	}
}
