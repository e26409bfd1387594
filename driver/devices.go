package driver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentos-run/agentos/vfs"
)

// FS is the file device over a run's sandbox namespace. Operations:
//
//	read_file  {"path": P}               -> "content"
//	write_file {"path": P, "content": C} -> null
//	list_files {"dir": D}                -> ["path", ...]
type FS struct {
	Sandbox *vfs.Sandbox
	// MaxReadBytes caps one read_file; 0 means 16 MiB.
	MaxReadBytes int
}

// Do implements Device.
func (f FS) Do(_ context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	switch op {
	case "read_file":
		var a struct {
			Path string `json:"path"`
		}
		if err := decode(op, req, &a); err != nil {
			return nil, err
		}
		max := f.MaxReadBytes
		if max == 0 {
			max = 16 << 20
		}
		if size, err := f.Sandbox.Size(a.Path); err == nil && size > int64(max) {
			return nil, Errorf(CodeInvalid, "read_file %q: the file has %d bytes, more than the %d a tool may read at once", a.Path, size, max)
		}
		b, err := f.Sandbox.ReadFile(a.Path)
		if err != nil {
			return nil, fsError(err)
		}
		if len(b) > max { // it grew since
			return nil, Errorf(CodeInvalid, "read_file %q: the file has %d bytes, more than the %d a tool may read at once", a.Path, len(b), max)
		}
		return encode(string(b))
	case "write_file":
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if err := decode(op, req, &a); err != nil {
			return nil, err
		}
		if err := f.Sandbox.WriteFile(a.Path, []byte(a.Content)); err != nil {
			return nil, fsError(err)
		}
		return json.RawMessage("null"), nil
	case "list_files":
		var a struct {
			Dir string `json:"dir"`
		}
		if err := decode(op, req, &a); err != nil {
			return nil, err
		}
		if a.Dir == "" {
			a.Dir = "."
		}
		names, err := f.Sandbox.List(a.Dir)
		if err != nil {
			return nil, fsError(err)
		}
		if names == nil {
			names = []string{}
		}
		return encode(names)
	}
	return nil, Errorf(CodeUnsupported, "fs has no operation %q (read_file, write_file, list_files)", op)
}

func fsError(err error) error {
	switch {
	case errors.Is(err, vfs.ErrSecurity):
		return &Error{Code: CodeSecurity, Message: err.Error()}
	case errors.Is(err, vfs.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, vfs.ErrInvalidPath):
		return &Error{Code: CodeInvalid, Message: err.Error()}
	}
	return &Error{Code: CodeIO, Message: err.Error()}
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
	return nil, Errorf(CodeUnsupported, "clock has no operation %q (now, sleep)", op)
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
