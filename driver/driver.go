package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"
)

// Host answers the calls of a tool run.
//
// IMPORTANT: Do MAY be called from several goroutines at once (a tool can
// have several calls in flight); implementations MUST be safe for that. Errors
// a tool should see with a code SHOULD be *Error; any other error reaches the
// tool as a plain Error with the error's text.
type Host interface {
	Do(ctx context.Context, c Call) (json.RawMessage, error)
}

// HostFunc adapts a function to Host.
type HostFunc func(ctx context.Context, c Call) (json.RawMessage, error)

// Do calls f.
func (f HostFunc) Do(ctx context.Context, c Call) (json.RawMessage, error) { return f(ctx, c) }

// Middleware wraps a Host, e.g. to journal every call.
type Middleware func(Host) Host

// Chain applies middleware to h; the first middleware is the outermost.
func Chain(h Host, mw ...Middleware) Host {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			h = mw[i](h)
		}
	}
	return h
}

// DeviceFunc adapts a function to Device.
type DeviceFunc func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error)

// Do calls f.
func (f DeviceFunc) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	return f(ctx, op, req)
}

// Mux is a Host that routes each call to the Device named by its Driver.
// It is read-only once built and safe for concurrent use.
type Mux map[string]Device

// Do routes c; an unknown driver is a clear CodeUnsupported error.
func (m Mux) Do(ctx context.Context, c Call) (json.RawMessage, error) {
	d, ok := m[c.Driver]
	if !ok {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, Errorf(CodeUnsupported, "no %q driver is configured for this runtime (configured: %s)", c.Driver, strings.Join(names, ", "))
	}
	if err := ctx.Err(); err != nil {
		return nil, Errorf(CodeUnavailable, "%s: the run ended: %v", c, err)
	}
	return d.Do(ctx, c.Op, c.Request)
}

// decode unmarshals a request into v, refusing unknown fields so that a
// misspelled argument is an error, not silently ignored.
func decode(op string, req json.RawMessage, v any) error {
	if len(req) == 0 {
		req = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(req))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(CodeInvalid, "%s: bad arguments: %v", op, err)
	}
	return nil
}

// decodeOne returns the value of a request that is exactly the object
// {"<key>":"<value>"} with a plain value (no escape, no control character,
// valid UTF-8): what decode would give for it, without reflection. ok false:
// decode it with decode.
func decodeOne(req json.RawMessage, key string) (value string, ok bool) {
	s := string(req)
	prefix := `{"` + key + `":"`
	if len(s) < len(prefix)+2 || s[:len(prefix)] != prefix || s[len(s)-2:] != `"}` {
		return "", false
	}
	v := s[len(prefix) : len(s)-2]
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	return v, utf8.ValidString(v)
}

// encodeString is encode(string(b)): the same bytes, without reflection
// for plain ASCII text (which json.Marshal writes as it is).
func encodeString(b []byte) (json.RawMessage, error) {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return encode(string(b))
		}
	}
	out := make([]byte, len(b)+2)
	out[0], out[len(out)-1] = '"', '"'
	copy(out[1:], b)
	return out, nil
}

func encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Errorf(CodeIO, "encoding the response: %v", err)
	}
	return b, nil
}
