package executor

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// snapshot is a run's pinned view of the tool tree: the first successful
// read of a file of the tools directory (vfs.Sandbox.ToolFile: no link on
// its way) goes through the run's Host as before, journaled and checked;
// every later read of it in the run, under any name (tools/x, /lib/x), is
// answered with that same answer from memory, without the jail's walk, the
// device or a journal entry. The run thus sees each file as its first read
// found it.
//
// Why replay and recovery stay exact: the first read is a recorded call
// like any other, and which reads are answered from the snapshot depends
// only on the run's own sequence of calls (never on timing), so a
// replayed or resumed run pins the same answers at the same calls and
// answers the same later reads from them.
//
// IMPORTANT:
//   - Rights are checked on every read, pinned or not: a pinned read the
//     caller's rights do not cover (revoked, expired, used up) goes through
//     the Host as before, and one they cover is authorized again
//     (vfs.Sandbox.ReadAllowed, counted as a read counts it); a refusal
//     found there is answered through the Host, so that it is journaled.
//   - A run sees its own writes: from the first fs call that is neither
//     read_file nor list_files (a write), the snapshot is dropped and every
//     later read goes through the Host.
//   - It is used only where a journal does not wait for each commit, with
//     the built-in fs. In process, reads are inlined there: the run's
//     goroutine makes them in call order. In a worker, the worker sends
//     its fs calls in call order (pinGate) and keeps the answers the
//     parent marks pinnable (a run without a caller's rights: a rights
//     run asks the parent for every read, which checks them here).
type snapshot struct {
	sb *vfs.Sandbox
	// recorded, for a replayed or resumed run, says whether its recording
	// holds a call (journal.Replayer.Recorded): a read within the
	// recording is pinned exactly when the recording holds no entry for it,
	// whatever the rights say now.
	recorded func(seq uint64) (has, within bool)
	// pinnedAt, for such a run in a worker, is the answer the recording
	// pinned a read of rel at seq to (recordedPins): the worker answered
	// that file's recorded read itself, the parent never saw it.
	pinnedAt func(rel string, seq uint64) (json.RawMessage, bool)

	mu      sync.Mutex
	off     bool                       // a write was started: nothing is pinned any more
	entries map[string]pinnedRead      // by the read_file request's bytes
	files   map[string]json.RawMessage // the same answers by root-relative path
}

// pinnedRead is one pinned file: its root-relative path (for the rights
// check) and the answer its first read gave.
type pinnedRead struct {
	path, rel string // as the tool named it; root-relative
	val       json.RawMessage
}

func newSnapshot(sb *vfs.Sandbox) *snapshot {
	return &snapshot{sb: sb, entries: map[string]pinnedRead{}, files: map[string]json.RawMessage{}}
}

// started is told of each call of the run when it starts, in call order,
// on the run's goroutine (bridge.Inline): a write drops the snapshot.
func (s *snapshot) started(c driver.Call) {
	if c.Driver != driver.FSDriver || c.Op == "read_file" || c.Op == "list_files" {
		return
	}
	s.mu.Lock()
	s.off, s.entries, s.files = true, nil, nil
	s.mu.Unlock()
}

// lookup returns the pinned read of req, if any: the run's fast path.
func (s *snapshot) lookup(req json.RawMessage) (pinnedRead, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return pinnedRead{}, false
	}
	e, ok := s.entries[string(req)]
	return e, ok
}

// locate is lookup for a request not seen before: the file it reads, when
// that is a file of the tools directory (e.rel set), pinned already under
// another name (tools/x, /lib/x, tools/./x) or not yet (e.val nil).
//
// IMPORTANT: a read inside a replayed or resumed run's recording (recorded)
// does not ask the disk, which may have changed since: the recording says
// which reads were pinned, and the path alone which file (onDisk false).
func (s *snapshot) locate(req json.RawMessage, onDisk bool) (e pinnedRead, pinned bool) {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(req, &a) != nil {
		return pinnedRead{}, false
	}
	toolFile := s.sb.ToolFile
	if !onDisk {
		toolFile = s.sb.ToolPath
	}
	rel, ok := toolFile(a.Path)
	if !ok {
		return pinnedRead{}, false
	}
	e = pinnedRead{path: a.Path, rel: rel}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return pinnedRead{}, false
	}
	if e.val, pinned = s.files[rel]; pinned {
		s.entries[string(req)] = e
	}
	return e, pinned
}

// pin keeps val, the successful answer to the read req of the file e
// (located, not pinned), for the rest of the run; false if a write came
// first (nothing is pinned).
func (s *snapshot) pin(req json.RawMessage, e pinnedRead, val json.RawMessage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return false
	}
	e.val = val
	s.entries[string(req)] = e
	s.files[e.rel] = val
	return true
}

// recordedPins is snapshot.pinnedAt for a run following rec in a worker:
// a read of rel at seq that the recording does not hold was answered from
// the latest successful recorded read of rel before it (as a replay in
// process pins it), unless a write came before it (nothing was pinned).
func recordedPins(sb *vfs.Sandbox, rec *journal.Replayer) func(rel string, seq uint64) (json.RawMessage, bool) {
	var once sync.Once
	var entries []journal.Entry
	return func(rel string, seq uint64) (val json.RawMessage, ok bool) {
		once.Do(func() { entries = rec.Answerable() })
		for _, en := range entries {
			if en.Seq >= seq {
				break
			}
			if en.Driver != driver.FSDriver || en.Op == "list_files" {
				continue
			}
			if en.Op != "read_file" {
				return nil, false
			}
			if r, isTool := toolPathOf(sb, en.Request); isTool && r == rel && en.Error == nil {
				val, ok = en.Response, true
			}
		}
		return val, ok
	}
}

// toolPathOf is the root-relative path of the tools directory file the
// read_file request req names (vfs.Sandbox.ToolPath).
func toolPathOf(sb *vfs.Sandbox, req json.RawMessage) (string, bool) {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(req, &a) != nil {
		return "", false
	}
	return sb.ToolPath(a.Path)
}

// refusedKey carries, to the fs device (refusingFS), the refusal the rights
// check of a pinned read found.
type refusedKey struct{}

// refusingFS is the run's fs device: a call carrying a refusal (refusedKey)
// is answered with it, so that the refusal of a pinned read passes through
// the middleware (the journal) like the refusal of any read.
type refusingFS struct{ driver.Device }

func (f refusingFS) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	if err, ok := ctx.Value(refusedKey{}).(error); ok {
		return nil, err
	}
	return f.Device.Do(ctx, op, req)
}

// readPinned answers c, a read_file call, from the snapshot when it reads a
// pinned file the caller may still read; otherwise through the Host,
// pinning the answer of a first read of a file of the tools directory.
// keep says the answer is pinned and the run has no caller's rights to
// check on each read: a worker may answer the same request itself from now
// on.
func (b *bridge) readPinned(ctx context.Context, c driver.Call) (val json.RawMessage, keep bool, err error) {
	has, within := false, false
	if b.snap.recorded != nil {
		has, within = b.snap.recorded(c.Seq)
	}
	e, pinned := b.snap.lookup(c.Request)
	if !pinned {
		e, pinned = b.snap.locate(c.Request, !within)
	}
	free := b.rights == nil
	switch {
	case has:
		pinned = false // answered from the recording, as it was
	case within && !pinned && e.rel != "" && b.snap.pinnedAt != nil:
		if v, ok := b.snap.pinnedAt(e.rel, c.Seq); ok {
			return v, b.snap.pin(c.Request, e, v) && free, nil
		}
	case within && pinned:
		return e.val, free, nil // answered from the snapshot when it was recorded
	}
	if !pinned || !b.snap.sb.ReadCovered(e.rel) {
		// Not pinned, or the caller's rights no longer cover it: the
		// read is made (and refused) exactly as before.
		val, err := b.host.Do(ctx, c)
		if err == nil && !pinned && e.rel != "" {
			keep = b.snap.pin(c.Request, e, val) && free
		}
		return val, keep, err
	}
	if rerr := b.snap.sb.ReadAllowed(e.path, e.rel); rerr != nil {
		val, err := b.host.Do(context.WithValue(ctx, refusedKey{}, error(&driver.Error{Code: driver.CodeSecurity, Message: rerr.Error()})), c)
		return val, false, err
	}
	return e.val, free, nil
}
