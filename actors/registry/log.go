package registry

// The registry log: what makes a write cost the same whatever the number
// of tools.
//
// meta.json is one JSON document: rewriting it costs the size of the
// registry. So Register and Remove do not rewrite it: they append one
// record to the log (Options.LogFile, default .agentos/registry.log, in
// the node's state directory, never committed) and return. meta.json is
// rewritten from memory (compaction) and the log emptied:
//
//   - when the log has grown as large as meta.json (so a write costs O(1)
//     amortised: a compaction of n tools follows at least about n writes);
//   - FlushDelay after a change (a burst of writes costs one rewrite);
//   - at Flush, Close, Open and Rebuild (an owner that publishes meta.json,
//     e.g. in a Git commit, MUST Flush first; the root package's Git
//     integration does it before every commit).
//
// Crash safety. A record is one line, "<crc32 of the JSON, 8 hex> <JSON>\n",
// written by one write(2) to a file opened O_APPEND: a write that
// returned is in the file (as meta.json's renames, it is not fsynced: a
// power loss may lose the last writes, never corrupt what stays). A torn
// last line (a kill mid-write) fails its checksum and is dropped with a
// warning; the tool it described is on disk and registered again from its
// file by the next Rebuild. Compaction renames the new meta.json into
// place before it empties the log (truncation), and records replay
// idempotently over any meta.json (a put keeps the higher version, usage
// only grows, a removal applies to the hash it removed), so a kill between
// the two renames loses nothing.
//
// Readers. Open and Rebuild read meta.json and then replay the log: every
// registry on the root sees every write. A program reading meta.json
// itself sees a write within FlushDelay, or after Flush.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"time"

	"github.com/agentos-run/agentos/vfs"
)

// DefaultLogFile is the registry log when Options.LogFile is empty.
const DefaultLogFile = "registry.log"

// minLogBytes is the log size below which no compaction is forced by size.
const minLogBytes = 64 << 10

// record is one line of the log: a tool registered (Put) or removed (Del,
// with the hash it had).
type record struct {
	Put  *Tool  `json:"put,omitempty"`
	Del  string `json:"del,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// encodeRecord renders a record as one checksummed line.
func encodeRecord(rec record) ([]byte, error) {
	j, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(j)+10)
	line = fmt.Appendf(line, "%08x ", crc32.ChecksumIEEE(j))
	line = append(line, j...)
	return append(line, '\n'), nil
}

// appendRecord writes rec at the end of the log. The caller holds r.io.
func (r *Registry) appendRecord(rec record) error {
	line, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	if r.logF == nil {
		if r.logF, err = r.state.OpenAppend(r.logFile); err != nil {
			return err
		}
		if fi, err := r.logF.Stat(); err == nil {
			r.logBytes = fi.Size()
		}
	}
	n, err := r.logF.Write(line)
	r.logBytes += int64(n)
	return err
}

// resetLog empties the log and releases its handle (reopened at the
// next record). The caller holds r.io.
func (r *Registry) resetLog() error {
	if r.state == nil {
		return nil
	}
	if r.logF != nil && r.logBytes == 0 {
		r.closeLog()
		return nil
	}
	if r.logF == nil {
		if fi, err := r.state.Stat(r.logFile); errors.Is(err, vfs.ErrNotFound) || (err == nil && fi.Size() == 0) {
			return nil
		}
	}
	if r.logF == nil {
		f, err := r.state.OpenAppend(r.logFile)
		if err != nil {
			return err
		}
		r.logF = f
	}
	// Truncation is one metadata change: a reader sees the whole log or an
	// empty one.
	err := r.logF.Truncate(0)
	r.closeLog()
	if err != nil {
		return err
	}
	r.logBytes = 0
	return nil
}

// closeLog closes the log's handle. The caller holds r.io.
func (r *Registry) closeLog() {
	if r.logF != nil {
		_ = r.logF.Close()
		r.logF = nil
	}
}

// replayLog applies the log's records to the entries read from meta.json
// (out, which it may create) and returns them.
func (r *Registry) replayLog(out map[string]*Tool) map[string]*Tool {
	if r.state == nil {
		return out
	}
	raw, err := r.state.ReadFile(r.logFile)
	if err != nil {
		if !errors.Is(err, vfs.ErrNotFound) {
			r.log.Warn("registry: cannot read the registry log; its writes are registered again from the tool files", slog.String("file", r.logFile), slog.Any("err", err))
		}
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		var rec record
		if len(b) < 10 || b[8] != ' ' || fmt.Sprintf("%08x", crc32.ChecksumIEEE(b[9:])) != string(b[:8]) || json.Unmarshal(b[9:], &rec) != nil {
			r.log.Warn("registry: a damaged record of the registry log (a write cut short); it and what follows are dropped, and the tools concerned registered again from their files",
				slog.String("file", r.logFile), slog.Int("line", line))
			break
		}
		if out == nil {
			out = map[string]*Tool{}
		}
		switch {
		case rec.Put != nil:
			t := rec.Put
			c, err := r.toolPath(t.Path)
			if err != nil || c != t.Path || t.Hash == "" {
				continue
			}
			t.Name = toolName(c)
			t.Version = max(t.Version, 1)
			if len(t.Tags) == 0 {
				t.Tags = nil
			}
			if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
				t.Parameters = nil
			}
			cur := out[c]
			if cur != nil && cur.Version > t.Version {
				continue // meta.json is newer (replaced by Git, compacted by another writer)
			}
			if cur != nil {
				t.Usage = max(t.Usage, cur.Usage)
			}
			out[c] = t
		case rec.Del != "":
			if cur := out[rec.Del]; cur != nil && cur.Hash == rec.Hash {
				delete(out, rec.Del)
			}
		}
	}
	return out
}

// scheduleCompaction arranges for meta.json to be rewritten once the
// writes have paused for FlushDelay (each write pushes it back: under a
// sustained stream of writes the log's size alone triggers compactions, so
// their cost stays amortised over the writes). The caller holds r.mu.
func (r *Registry) scheduleCompaction() {
	if r.closed || r.flushDelay <= 0 {
		return
	}
	if r.compactTimer == nil {
		r.compactTimer = time.AfterFunc(r.flushDelay, r.compactLater)
		return
	}
	r.compactTimer.Reset(r.flushDelay)
}

// compactLater is the compaction timer's function.
func (r *Registry) compactLater() {
	if err := r.persist(false); err != nil {
		r.log.Warn("registry: rewriting the registry file failed; its changes are in the log, and retried at the next write", slog.String("file", r.file), slog.Any("err", err))
	}
}

// logOutgrown says whether the log is as large as meta.json: time to
// compact. The caller holds r.io.
func (r *Registry) logOutgrown() bool {
	return r.logBytes >= max(minLogBytes, r.writtenBytes)
}
