package sandbox

// Marshalling: the tool's result into JSON text, and JSON from a driver
// call into the runtime.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// result is the tool's result as JSON text, as JSON.stringify (with the
// run's replacer) writes it: undefined is null, and the result and the logs
// together must fit the output limit.
func (r *run) result(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	if res, done, err := r.primitiveResult(v); done {
		return res, err
	}
	r.notes = &valueNotes{}
	s, err := r.strfy(nil, v, r.replacer)
	notes := r.notes
	r.notes = nil
	if err != nil {
		return nil, r.unstringifiable(err)
	}
	for _, w := range notes.warnings() {
		r.warn(w)
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	text := s.String()
	if r.out+len(text) > r.lim.MaxOutputBytes {
		return nil, errorf(KindOutput, "the result (%d bytes) and logs (%d bytes) exceed the %d-byte output limit: return less, or write large output to a file", len(text), r.out, r.lim.MaxOutputBytes)
	}
	return json.RawMessage(text), nil
}

// primitiveResult decides, without the replacer, a primitive result that
// JSON cannot hold: NaN and ±Infinity are returned as null with a warning,
// a BigInt or a symbol is refused. done is false for any other value, which
// result stringifies.
func (r *run) primitiveResult(v goja.Value) (res json.RawMessage, done bool, err error) {
	if _, isObj := v.(*goja.Object); isObj {
		return nil, false, nil
	}
	switch x := v.Export().(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			r.warn(fmt.Sprintf("warn: result is %s, which JSON cannot hold: it was returned as null", v.String()))
			return json.RawMessage("null"), true, nil
		}
	case *big.Int:
		return nil, true, &Error{Kind: KindException, Message: "the tool's result cannot be turned into JSON: TypeError: result: the BigInt " + x.String() + "n has no JSON form: return Number(n) when it is exact as a number (|n| <= 2^53), or String(n)"}
	}
	if _, isSym := v.(*goja.Symbol); isSym {
		return nil, true, &Error{Kind: KindException, Message: "the tool's result cannot be turned into JSON: TypeError: result: the tool returned a symbol, which has no JSON form: return data (an object, array, string, number, boolean or null)"}
	}
	return nil, false, nil
}

// unstringifiable is the error of a result JSON.stringify threw on (a
// cycle, a BigInt inside, a throwing toJSON): what it threw, read safely.
func (r *run) unstringifiable(err error) error {
	var ex *goja.Exception
	if !errors.As(err, &ex) {
		return err
	}
	var msg string
	if derr := r.safely(func() { msg = ex.Value().String() }); derr != nil {
		msg = plain(ex.Value())
	}
	return &Error{Kind: KindException, Message: "the tool's result cannot be turned into JSON: " + msg}
}

// warn adds a warning line to the run's logs, counted in its output.
func (r *run) warn(line string) {
	r.out += len(line)
	r.logs = append(r.logs, line)
}

// fromJSON turns JSON text into a runtime value.
func (r *run) fromJSON(val json.RawMessage) (goja.Value, error) {
	if len(val) == 0 {
		return goja.Undefined(), nil
	}
	if v, ok := r.answer.of(val); ok {
		return v, nil
	}
	if s, ok := plainString(val); ok {
		v := r.vm.ToValue(s) // what JSON.parse gives, without the parser
		r.answer = lastAnswer{s: s, v: v}
		return v, nil
	}
	return r.parse(nil, r.vm.ToValue(string(val)))
}

// lastAnswer is the latest plain JSON string answer (plainString) a run
// turned into a value: a string is immutable, so the same answer again (a
// pinned read in a loop) is given the same value, not copied and scanned.
type lastAnswer struct {
	s string // the string, without its quotes
	v goja.Value
}

// of is a's value when val is the same JSON string.
func (a *lastAnswer) of(val json.RawMessage) (goja.Value, bool) {
	if a.v == nil || len(val) != len(a.s)+2 || val[0] != '"' || val[len(val)-1] != '"' {
		return nil, false
	}
	return a.v, string(val[1:len(val)-1]) == a.s
}

// plainString returns the string a JSON string literal without escapes or
// control characters stands for (e.g. a read_file answer); ok false: any
// other JSON.
func plainString(val json.RawMessage) (string, bool) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return "", false
	}
	body := val[1 : len(val)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}
