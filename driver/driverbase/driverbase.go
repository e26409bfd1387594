// Package driverbase holds what a tool run's calls are made of (Call,
// Error and its codes, Device) and the two devices a sandbox worker may
// answer itself (Clock, Random), with nothing else: the sandbox worker
// (cmd/agentos-worker) links it without the drivers of package driver
// (SQL databases, HTTP fetch, the model's API). Package driver names each
// of these again; use them from there.
package driverbase

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Driver names used by the sandbox.
const (
	FSDriver     = "fs"
	ClockDriver  = "clock"
	RandomDriver = "random"
)

// Call is one request from a tool run to a device.
type Call struct {
	// Seq is the 1-based position of the call in its run, in issue order.
	Seq uint64 `json:"seq"`
	// Driver names the device: "fs", "clock", "random", "sql", "fetch", ...
	Driver string `json:"driver"`
	// Op is the operation on that device, e.g. "read_file".
	Op string `json:"op"`
	// Request is the operation's argument object as JSON; may be empty.
	Request json.RawMessage `json:"request,omitempty"`
}

// String names the call for logs and errors: "#3 fs.read_file".
func (c Call) String() string { return fmt.Sprintf("#%d %s.%s", c.Seq, c.Driver, c.Op) }

// Error codes a tool sees as err.code.
const (
	CodeSecurity    = "security"         // the jail or an allow-list refused the call
	CodeNotFound    = "not_found"        // nothing at that path
	CodeInvalid     = "invalid_argument" // the request is malformed
	CodeUnsupported = "unsupported"      // no such driver or operation
	CodeIO          = "io"               // the device failed
	CodeUnavailable = "unavailable"      // the device cannot answer now (e.g. run ended)
	CodeQuota       = "quota"            // the caller's quota refused the call's cost
	// CodeAbort ends the whole run instead of failing one call: the tool
	// cannot catch it. The journal uses it when a replay diverges.
	CodeAbort = "abort_run"
)

// Error is a failed call as the tool sees it: a JS Error whose .code is Code.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError turns any error into an *Error, keeping the code of one already.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeIO, Message: err.Error()}
}

// Device is one driver: it answers the operations of calls routed to it.
type Device interface {
	Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error)
}

// Clock is the time device behind Date and the sandbox's timers. Operation
// "now" answers the time as Unix milliseconds (a JSON number), the
// resolution of a JS Date. Operation "sleep" with request {"until": ms}
// waits until the clock reads at least ms (the real time that is missing, at
// most; it ends early with an error when ctx ends) and answers the time it
// woke, never less than until, so timers make progress even on a clock that
// stands still. Both are driver calls, so the journal records them and a
// replay serves them without waiting: the same timers fire in the same order
// with the same Date values.
type Clock struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// MaxSleep bounds one clock "sleep" (a timer's delay): longer waits are
// refused, as no run may last that long anyway.
const MaxSleep = 24 * time.Hour

// Do implements Device.
func (c Clock) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	switch op {
	case "now":
		return encode(now().UnixMilli())
	case "sleep":
		return sleepUntil(ctx, now, req)
	}
	return nil, Errorf(CodeUnsupported, "clock has no operation %q (now, sleep)", op)
}

// sleepUntil is the clock's "sleep" (see Clock), on the clock now.
func sleepUntil(ctx context.Context, now func() time.Time, req json.RawMessage) (json.RawMessage, error) {
	var r struct {
		Until *int64 `json:"until"`
	}
	if err := json.Unmarshal(req, &r); err != nil || r.Until == nil {
		return nil, Errorf(CodeInvalid, "clock.sleep takes {\"until\": unix_ms}, got %s", req)
	}
	d := time.Duration(*r.Until-now().UnixMilli()) * time.Millisecond
	if d > MaxSleep {
		return nil, Errorf(CodeInvalid, "clock.sleep of %v is longer than the %v a timer may wait", d, MaxSleep)
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, Errorf(CodeUnavailable, "clock.sleep ended early: %v", context.Cause(ctx))
		}
	}
	return encode(max(now().UnixMilli(), *r.Until))
}

// Random is the entropy device behind Math.random. Operation "seed" answers a
// 64-bit seed (a JSON number); the sandbox derives Math.random from it with a
// fixed PRNG, so one recorded seed reproduces every number of a run.
type Random struct {
	// Seed returns the seed; nil means crypto/rand.
	Seed func() uint64
}

// Do implements Device.
func (r Random) Do(_ context.Context, op string, _ json.RawMessage) (json.RawMessage, error) {
	if op != "seed" {
		return nil, Errorf(CodeUnsupported, "random has no operation %q (seed)", op)
	}
	if r.Seed != nil {
		return encode(r.Seed())
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, Errorf(CodeIO, "reading entropy: %v", err)
	}
	return encode(binary.LittleEndian.Uint64(b[:]))
}

func encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Errorf(CodeIO, "encoding the response: %v", err)
	}
	return b, nil
}
