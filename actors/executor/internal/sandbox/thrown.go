package sandbox

// Failures: errors thrown into the runtime, and what the tool threw or the
// runtime raised classified into an *Error, read safely.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/agentos-run/agentos/internal/clip"
	"github.com/dop251/goja"

	driver "github.com/agentos-run/agentos/driver/driverbase"
)

// throw builds a JS Error with a code, to panic with from a Go function.
func (r *run) throw(code, msg string) *goja.Object {
	obj, err := r.vm.New(r.errCtr, r.vm.ToValue(msg))
	if err != nil {
		return r.vm.NewTypeError(msg)
	}
	obj.Set("code", code)
	return obj
}

func (r *run) jsError(err error) *goja.Object {
	e := driver.AsError(err)
	return r.throw(e.Code, e.Message)
}

// classify turns what the runtime returned into an *Error.
//
// IMPORTANT: it never formats a goja.Exception with Error or String, and
// looks at the error's own type before any errors.As/Is: those would run the
// tool's code (a toString, a getter, a Proxy trap on the thrown value) with
// no bound, outside the run.
func (r *run) classify(err error) *Error {
	reason := r.reason.Load()
	switch x := err.(type) {
	case *goja.InterruptedError:
		return r.interrupted(x, reason)
	case *goja.StackOverflowError:
		return r.overflowed(x)
	case *goja.Exception:
		return r.thrown(x.Value(), x.Stack())
	case *Error:
		if reason != nil && x == reason {
			e := *reason
			r.timersNote(&e)
			return &e
		}
		return x
	}
	return r.classifyWrapped(err, reason)
}

// classifyWrapped classifies an error that is none of the runtime's own
// types but may wrap one (or the run's abort reason, when it has one).
// Unwrapping is safe here: classify has ruled out a goja.Exception.
func (r *run) classifyWrapped(err error, reason *Error) *Error {
	if reason != nil {
		var ie *goja.InterruptedError
		if errors.As(err, &ie) || errors.Is(err, reason) {
			e := *reason
			if ie != nil {
				e.Stack = ie.String()
			}
			return &e
		}
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return r.overflowed(so)
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return r.interrupted(ie, nil)
	}
	var ce *goja.CompilerSyntaxError
	if errors.As(err, &ce) {
		return errorf(KindCompile, "%v", ce)
	}
	return errorf(KindInternal, "%v", err)
}

// interrupted is the error of a run the runtime interrupted: the abort
// reason (nil: none was recorded) with the stack where the tool stopped.
func (r *run) interrupted(x *goja.InterruptedError, reason *Error) *Error {
	if reason == nil {
		return errorf(KindInternal, "interrupted: %v", x.Value())
	}
	e := *reason
	e.Stack = x.String()
	r.timersNote(&e)
	return &e
}

// overflowed is the error of a run whose call stack passed MaxCallDepth.
func (r *run) overflowed(x *goja.StackOverflowError) *Error {
	return &Error{Kind: KindStack, Message: fmt.Sprintf("the call stack grew past %d frames: look for runaway recursion", r.lim.MaxCallDepth), Stack: x.String()}
}

// maxThrownText bounds the message and the stack of a thrown value as
// reported: a tool can throw a string of hundreds of megabytes.
const maxThrownText = 64 << 10

// clipError bounds the text of a run's error as a thrown value's is
// bounded: a message or stack over maxThrownText (a toJSON that threw a
// huge string, a BigInt of a million digits, a deep stack of long names)
// is clipped. IMPORTANT: the parent refuses a worker's outcome larger than
// the output limit plus room for these two (executor's overOutput).
func clipError(e *Error) *Error {
	if e == nil || (len(e.Message) <= maxThrownText && len(e.Stack) <= maxThrownText) {
		return e
	}
	c := *e
	c.Message, c.Stack = clip.N(c.Message, maxThrownText), clip.N(c.Stack, maxThrownText)
	return &c
}

// thrown describes a value the tool threw (or rejected with) and did not
// catch: "Name: message", the driver code if it has one, and the stack
// (frames, when the runtime captured them, else the value's own stack).
//
// Reading name, message, code or stack may run the tool's code (getters,
// toString, Proxy traps): each read is bounded (see safely), and a read
// that throws, loops or overflows is reported as part of the tool's error.
func (r *run) thrown(v goja.Value, frames []goja.StackFrame) *Error {
	out := &Error{Kind: KindException, Message: "undefined"}
	obj, isObj := v.(*goja.Object)
	readable := false
	switch {
	case v == nil:
	case !isObj:
		out.Message = "the tool threw a non-Error value: " + primitiveText(v) // no tool code runs
	default:
		out.Message, readable = r.thrownMessage(obj)
	}
	out.Stack = frameStack(out.Message, frames)
	if readable {
		out.Code, _ = r.textOf(obj, "code")
		if st, err := r.textOf(obj, "stack"); err == nil && st != "" && (out.Stack == "" || !strings.Contains(out.Stack, "at ")) {
			out.Stack = st
		}
	}
	out.Message = clip.N(out.Message, maxThrownText)
	out.Stack = clip.N(out.Stack, maxThrownText)
	return out
}

// thrownMessage is the message of a thrown object: "Name: message" when it
// has either, else its text, else its JSON when its text says nothing.
// readable is false when its name or message could not be read: the
// message then says so, and nothing more should be read from it.
func (r *run) thrownMessage(obj *goja.Object) (msg string, readable bool) {
	name, err := r.textOf(obj, "name")
	if err != nil {
		return fmt.Sprintf("the tool threw %s whose name could not be read: %v", plain(obj), err), false
	}
	message, err := r.textOf(obj, "message")
	if err != nil {
		return fmt.Sprintf("the tool threw %s whose message could not be read: %v", plain(obj), err), false
	}
	if message != "" || name != "" {
		return strings.TrimPrefix(name+": "+message, ": "), true
	}
	var text string
	if err := r.safely(func() { text = obj.String() }); err != nil {
		return fmt.Sprintf("the tool threw %s that could not be turned into text: %v", plain(obj), err), true
	}
	if strings.HasPrefix(text, "[object ") || obj.ClassName() == "Array" {
		// throw {code: "E_BAD"}: its own toString says nothing ("[object
		// Object]"), its JSON says what the tool meant.
		if j := r.thrownJSON(obj); j != "" && (j != "{}" || text == "[object Object]") {
			return "the tool threw a non-Error value: " + j, true
		}
	}
	return text, true
}

// thrownJSON is obj's JSON text, "" when it has none or writing it threw.
func (r *run) thrownJSON(obj *goja.Object) string {
	var text string
	if err := r.safely(func() {
		if s, err := r.strfy(nil, obj); err == nil && !goja.IsUndefined(s) {
			text = s.String()
		}
	}); err != nil {
		return ""
	}
	return text
}

// textOf reads obj's property name as text ("" when it is undefined or
// null), bounded as safely bounds any read that may run the tool's code.
func (r *run) textOf(obj *goja.Object, name string) (string, error) {
	var s string
	err := r.safely(func() {
		if x := obj.Get(name); x != nil && !goja.IsUndefined(x) && !goja.IsNull(x) {
			s = x.String()
		}
	})
	return s, err
}

// frameStack writes message followed by one "\tat" line per frame, as a
// JavaScript stack reads; "" when the runtime captured no frames.
func frameStack(message string, frames []goja.StackFrame) string {
	if len(frames) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(message)
	b.WriteByte('\n')
	for _, f := range frames {
		var fb bytes.Buffer
		f.Write(&fb)
		b.WriteString("\tat ")
		b.Write(fb.Bytes())
		b.WriteByte('\n')
	}
	return b.String()
}

// primitiveText writes a thrown primitive as JSON where JSON can say it
// (a string quoted, null, a number, true/false) and as JavaScript writes it
// otherwise (undefined, NaN, Infinity, 5n, Symbol(x)). It runs no tool code.
func primitiveText(v goja.Value) string {
	if sym, ok := v.(*goja.Symbol); ok {
		return "Symbol(" + sym.String() + ")" // String and Export give only its description
	}
	switch x := v.Export().(type) {
	case string:
		b, _ := json.Marshal(clip.N(x, maxThrownText))
		return string(b)
	case nil:
		if goja.IsNull(v) {
			return "null"
		}
		return "undefined"
	case *big.Int:
		return x.String() + "n"
	}
	return v.String()
}

// describeBudget bounds the tool code that describing a thrown value may run
// (a getter on message, a toString). IMPORTANT: the run's own deadline may
// have passed already, so nothing else would stop a getter that loops.
const describeBudget = 250 * time.Millisecond

// errDescribeBudget interrupts the tool code run by safely.
var errDescribeBudget = errors.New("it ran longer than " + describeBudget.String() + " and was stopped")

// safely runs f, which may run the tool's code, for at most describeBudget.
// A throw, an interrupt or a stack overflow in it is returned as an error
// whose text runs no tool code.
func (r *run) safely(f func()) (err error) {
	fired := make(chan struct{})
	t := time.AfterFunc(describeBudget, func() {
		r.vm.Interrupt(errDescribeBudget)
		close(fired)
	})
	defer func() {
		if !t.Stop() {
			<-fired
			r.vm.ClearInterrupt() // had it not reached the tool's code, it must not stop the next read
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s", describePanic(p))
		}
	}()
	if ex := r.vm.Try(f); ex != nil {
		return fmt.Errorf("it threw %s", plain(ex.Value()))
	}
	return nil
}

// describePanic describes what a goja call panicked with without running
// any tool code (never Exception.Error, which calls the value's toString).
func describePanic(p any) string {
	switch x := p.(type) {
	case *goja.InterruptedError:
		if e, ok := x.Value().(error); ok {
			return e.Error()
		}
		return "it was interrupted"
	case *goja.StackOverflowError:
		return "it overflowed the call stack"
	case *goja.Exception:
		return "it threw " + plain(x.Value())
	case *Error:
		return x.Error()
	case goja.Value:
		return "it threw " + plain(x)
	case error:
		return x.Error()
	}
	return fmt.Sprint(p)
}

// plain names v without running any tool code: a primitive as its text, an
// object by its class.
func plain(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	if o, ok := v.(*goja.Object); ok {
		return "an object of class " + o.ClassName()
	}
	return clip.N(v.String(), 200)
}
