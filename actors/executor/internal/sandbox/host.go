package sandbox

// The host bridge: the tgp bindings and console installed in a runtime,
// driver calls through the Bridge, and the clock and random sources.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/dop251/goja"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// installGlobals defines tgp and console on vm; their functions act on the
// run that h points at when they are called.
func installGlobals(vm *goja.Runtime, h *hooks, bindings []Binding) {
	tgp := vm.NewObject()
	if bindings == nil {
		bindings = DefaultBindings
	}
	for _, b := range bindings {
		tgp.Set(b.Name, func(c goja.FunctionCall) goja.Value { return h.run.callBinding(b, c) })
	}
	logFn := func(prefix string) func(goja.FunctionCall) goja.Value {
		return func(c goja.FunctionCall) goja.Value { return h.run.log(prefix, c) }
	}
	tgp.Set("log", logFn(""))
	vm.Set("tgp", tgp)
	vm.Set("setTimeout", func(c goja.FunctionCall) goja.Value { return h.run.setTimer(c, false) })
	vm.Set("setInterval", func(c goja.FunctionCall) goja.Value { return h.run.setTimer(c, true) })
	vm.Set("clearTimeout", func(c goja.FunctionCall) goja.Value { return h.run.clearTimer(c) })
	vm.Set("clearInterval", func(c goja.FunctionCall) goja.Value { return h.run.clearTimer(c) })
	console := vm.NewObject()
	for _, lvl := range []string{"log", "info", "debug"} {
		console.Set(lvl, logFn(""))
	}
	console.Set("warn", logFn("warn: "))
	console.Set("error", logFn("error: "))
	vm.Set("console", console)
}

func sameBinding(a, b Binding) bool {
	return a.Name == b.Name && a.Driver == b.Driver && a.Op == b.Op && slices.Equal(a.Params, b.Params)
}

// callBinding is tgp.<name>: positional args -> request object -> Call,
// answered asynchronously through a promise.
//
// IMPORTANT: the promise is returned pending, whatever the bridge does: the
// run's loop settles it (completeOldest) after every microtask queued before
// it has run, in the order the calls were made. A call answered at once
// (Inliner) MUST NOT settle it sooner: in a worker the same call is answered
// later, and the order a tool observes (and its journal) would differ.
func (r *run) callBinding(b Binding, c goja.FunctionCall) goja.Value {
	request := r.request(b, c)
	if !r.takeSlot() {
		return goja.Undefined() // the run is being stopped; the interrupt follows
	}
	call := driver.Call{Seq: r.seq.Add(1), Driver: b.Driver, Op: b.Op, Request: request}
	p, resolve, reject := r.vm.NewPromise()
	r.calls.Add(1)
	ch, res := r.dispatch(call)
	r.queue = append(r.queue, pending{ch: ch, res: res, resolve: resolve, reject: reject})
	return r.vm.ToValue(p)
}

// request is the JSON request of a call of b with c's arguments.
// IMPORTANT: it MAY be the bytes of an earlier call's request (see
// plainRequest): no one modifies a call's request.
func (r *run) request(b Binding, c goja.FunctionCall) json.RawMessage {
	if request, ok := r.plainRequest(b, c); ok {
		return request
	}
	req := r.vm.NewObject()
	for i, name := range b.Params {
		if a := c.Argument(i); !goja.IsUndefined(a) {
			req.Set(name, a)
		}
	}
	s, err := r.strfy(nil, req)
	if err != nil {
		panic(r.throw(driver.CodeInvalid, fmt.Sprintf("tgp.%s: arguments are not JSON-serializable: %v", b.Name, err)))
	}
	return json.RawMessage(s.String())
}

// takeSlot takes one of the run's MaxInFlight slots, waiting for one;
// false: the run is being stopped.
func (r *run) takeSlot() bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default: // all taken: wait for one, or the stop
	}
	select {
	case r.slots <- struct{}{}:
		return true
	case <-r.stop:
		return false
	}
}

// dispatch makes call through the bridge: its answer res, known at once
// by an Instant or made at once by an Inliner, or the channel ch that will
// carry it, the call started by a Starter or made on a helper goroutine.
// The slot and the count of calls in flight are given back when the call
// is answered.
func (r *run) dispatch(call driver.Call) (ch chan callResult, res callResult) {
	if in, ok := r.br.(Instant); ok {
		if val, ok := in.Instant(call); ok {
			r.answered()
			return nil, callResult{val: val}
		}
	}
	if st, ok := r.br.(Starter); ok {
		ch = make(chan callResult, 1)
		st.Start(r.ctx, call, func(val json.RawMessage, err error) {
			<-r.slots
			ch <- callResult{val, err}
			r.calls.Done()
		})
		return ch, res
	}
	if in, ok := r.br.(Inliner); ok && in.Inline(call) {
		res.val, res.err = r.do(call)
		r.answered()
		return nil, res
	}
	ch = make(chan callResult, 1)
	r.goCall(func() {
		defer r.calls.Done()
		val, err := r.do(call)
		<-r.slots
		ch <- callResult{val, err}
	})
	return ch, res
}

// answered gives back the slot and the count of a call answered on the
// run's goroutine.
func (r *run) answered() {
	<-r.slots
	r.calls.Done()
}

// plainRequest is the request JSON.stringify makes of a binding's
// arguments when every one given is a string of printable ASCII without a
// quote or backslash (e.g. tgp.read_file('data.txt')): the same bytes,
// without building an object and stringifying it. ok false: any other
// argument; stringify them. The latest one-argument request is kept
// (r.lastReq): a loop reading one file builds its request once, and its
// calls share its bytes.
func (r *run) plainRequest(b Binding, c goja.FunctionCall) (json.RawMessage, bool) {
	if len(c.Arguments) > len(b.Params) {
		return nil, false
	}
	if len(c.Arguments) != 1 || !goja.IsString(c.Arguments[0]) {
		req, ok := plainRequest(b, c)
		return json.RawMessage(req), ok
	}
	arg := c.Arguments[0].String()
	if last := &r.lastReq; last.req != nil && last.binding == b.Name && last.arg == arg {
		return last.req, true
	}
	req, ok := plainRequest(b, c)
	if !ok {
		return nil, false
	}
	r.lastReq = lastRequest{binding: b.Name, arg: arg, req: json.RawMessage(req)}
	return r.lastReq.req, true
}

// lastRequest is the latest one-argument plain request a run built.
type lastRequest struct {
	binding, arg string
	req          json.RawMessage
}

// plainRequest is run.plainRequest without the kept request.
func plainRequest(b Binding, c goja.FunctionCall) (string, bool) {
	if len(c.Arguments) > len(b.Params) {
		return "", false
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, a := range c.Arguments {
		if goja.IsUndefined(a) {
			continue // JSON.stringify leaves undefined fields out
		}
		if !goja.IsString(a) {
			return "", false
		}
		s := a.String()
		if !plainASCII(s) || !plainASCII(b.Params[i]) {
			return "", false
		}
		if sb.Len() > 1 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"` + b.Params[i] + `":"`)
		sb.WriteString(s)
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String(), true
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: JSON writes it as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// do calls the bridge, turning a panic in a Host into an error.
func (r *run) do(c driver.Call) (val json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = driver.Errorf(driver.CodeIO, "%s: the driver panicked: %v", c, p)
		}
	}()
	return r.br.Do(r.ctx, c)
}

// syncCall makes a call that must answer before the runtime continues
// (clock, random seed). A failure aborts the run: the tool cannot catch it.
func (r *run) syncCall(drv, op string) json.RawMessage {
	val, err := r.do(driver.Call{Seq: r.seq.Add(1), Driver: drv, Op: op})
	if err != nil {
		r.abort(&Error{Kind: KindHostFailure, Message: fmt.Sprintf("%s.%s: %v", drv, op, err), Code: driver.AsError(err).Code})
		return nil
	}
	return val
}

func (r *run) now() time.Time {
	var ms int64
	if val := r.syncCall(driver.ClockDriver, "now"); val != nil {
		if err := json.Unmarshal(val, &ms); err != nil {
			r.abort(errorf(KindHostFailure, "clock.now answered %s, not Unix milliseconds", val))
		}
	}
	r.timers.now, r.timers.haveNow = max(ms, r.timers.now), true
	return time.UnixMilli(ms).UTC()
}

func (r *run) random() float64 {
	if r.rng == nil {
		var seed uint64
		if val := r.syncCall(driver.RandomDriver, "seed"); val != nil {
			if err := json.Unmarshal(val, &seed); err != nil {
				r.abort(errorf(KindHostFailure, "random.seed answered %s, not a 64-bit seed", val))
			}
		}
		r.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	return r.rng.Float64()
}

// log is tgp.log and console.*: one line of the run's logs.
func (r *run) log(prefix string, c goja.FunctionCall) goja.Value {
	parts := make([]string, len(c.Arguments))
	for i, a := range c.Arguments {
		parts[i] = r.format(a)
	}
	line := prefix + strings.Join(parts, " ")
	r.out += len(line)
	if r.out > r.lim.MaxOutputBytes {
		r.abort(errorf(KindOutput, "the tool logged more than its %d-byte output limit: log less", r.lim.MaxOutputBytes))
		return goja.Undefined()
	}
	r.logs = append(r.logs, line)
	return goja.Undefined()
}

func (r *run) format(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if _, isSym := v.(*goja.Symbol); isSym {
		return primitiveText(v)
	}
	if _, isObj := v.(*goja.Object); !isObj {
		return v.String() // NaN, Infinity, 10 (a BigInt), undefined, null, true
	}
	if _, isFn := goja.AssertFunction(v); !isFn {
		if s, err := r.strfy(nil, v, r.replacer); err == nil && !goja.IsUndefined(s) {
			return s.String()
		}
	}
	return v.String()
}
