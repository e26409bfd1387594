package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Listing a tool's runs. A tool's page lists its versions and each
// version's runs as fast on a journal of 100,000 runs as on one of ten:
// the storage keeps an index of the runs by tool, kept by the write that
// starts, changes or ends a run (its metadata), by Prune and by Import.
//
// bbolt: the bucket "tools", keys only (values empty), path and hash
// each length-prefixed (uvarint), so that one tool's keys are never
// another's prefix:
//
//	path 0x00 started-key               a run of the tool (any version)
//	path 0x01 hash 0x00 started-key     a run of the tool at that version
//	path 0x01 hash 0x01 started-key     a run that required it, at that version, as a module
//	path 0x02 hash -> runs, required    the version's counts (two 8-byte big-endian numbers)
//
// where started-key is the run's key in the index "started" (page.go):
// a listing reads the run's call count there. The counts are kept with
// the keys they count, so that a tool's versions cost a read per version,
// not per run.
//
// PostgreSQL: the table agentos_journal_tool_runs (path, hash, module,
// started, run), one row per run of a tool (hash '' when the run has none)
// and per module a run required.
//
// Journals written before the index (storage format 3 and older) are
// indexed once when opened (one pass over the runs' metadata).

// ToolQuery selects the runs EachRunOf lists: one tool's runs (as their
// entry), newest first.
type ToolQuery struct {
	// Tool is the tool's root-relative path (tools/x.ts), as runs record it.
	Tool string
	// Version, when set, lists only the runs of the tool at this content
	// hash (the whole hash, as Version.Hash gives it).
	Version string
	// Before lists the runs that started before this run (its id or a
	// unique prefix; with the same start, a smaller id): the next page
	// starts before the last run of a page.
	Before string
	// Limit is the most runs listed; 0 lists every run.
	Limit int
}

func (q ToolQuery) check() error {
	switch {
	case q.Tool == "":
		return fmt.Errorf("journal: a listing of a tool's runs needs the tool's path (e.g. tools/x.ts)")
	case q.Limit < 0:
		return fmt.Errorf("journal: a run listing's limit must be 0 (every run) or more, not %d", q.Limit)
	}
	return nil
}

// EachRunOf calls fn with the runs q selects, newest first (by start,
// then id), with RunMeta.Calls filled in, read from the tool index: a
// listing reads only the runs it lists, however many runs of other tools
// the journal holds. It reads listChunk runs per read transaction, as
// EachRun does: a run written while the listing runs may or may not be
// listed; no run is listed twice. fn returning an error stops the listing
// with that error. A Before that names no run is ErrNoRun.
func (j *Journal) EachRunOf(q ToolQuery, fn func(RunMeta) error) error {
	if err := q.check(); err != nil {
		return err
	}
	return j.eachPage(q.Before, q.Limit, func(st store, at runCursor, n int) ([]RunMeta, error) {
		return st.toolRunsPage(q.Tool, q.Version, at, n)
	}, fn)
}

// ToolVersions returns the versions of the tool at path the journal
// keeps, newest first (by their latest run, then its id), as Versions
// does but without Version.Modules: it reads the tool index and each
// version's latest run only (Versions also looks for each version's latest
// pinned run).
func (j *Journal) ToolVersions(path string) ([]Version, error) {
	j.barrier()
	var vs []Version
	if err := j.readNow(func(st store) (err error) {
		vs, err = st.versionsOf(path)
		return err
	}); err != nil {
		return nil, err
	}
	for i := range vs {
		vs[i].Tool = path
		last, err := j.Get(vs[i].LastRun)
		if err != nil {
			return nil, err
		}
		vs[i].Commit = last.Commit
	}
	slices.SortStableFunc(vs, compareVersions)
	return vs, nil
}

// compareVersions orders versions newest first: by their latest run's
// start, then its id.
func compareVersions(a, b Version) int {
	if c := b.Last.Compare(a.Last); c != 0 {
		return c
	}
	return bytes.Compare([]byte(b.LastRun), []byte(a.LastRun))
}

// pinnedModules returns the modules of the latest pinned run of path at
// hash (nil when none is pinned), walking its runs newest first.
func (j *Journal) pinnedModules(path, hash string) ([]Module, error) {
	var mods []Module
	err := j.EachRunOf(ToolQuery{Tool: path, Version: hash}, func(m RunMeta) error {
		if m.Pinned {
			mods = slices.Clone(m.Modules)
			return errPageFull
		}
		return nil
	})
	if err == errPageFull {
		err = nil
	}
	return mods, err
}

// addRole adds to v the runs (module: the requirings) of one role: n of
// them, the first started at first, the latest, run, at last.
func (v *Version) addRole(module bool, n int, first, last time.Time, run string) {
	if module {
		v.Required += n
	} else {
		v.Runs += n
	}
	if first.Before(v.First) {
		v.First = first
	}
	if c := last.Compare(v.Last); c > 0 || c == 0 && run > v.LastRun {
		v.Last, v.LastRun = last, run
	}
}

// errPageFull stops a listing early (never returned).
var errPageFull = fmt.Errorf("journal: page full")

// toolRef is one entry of a run in the tool index: the run ran the tool
// at path at version hash, as its entry or (module) as a module it
// required.
type toolRef struct {
	path, hash string
	module     bool
}

// indexed is what the indexes keep of a run's metadata.
type indexed struct {
	Started time.Time `json:"started"`
	Tool    string    `json:"tool"`
	Hash    string    `json:"hash"`
	Modules []Module  `json:"modules"`
}

// decodeIndexed reads the indexed fields of a stored RunMeta.
func decodeIndexed(meta []byte) (indexed, error) {
	var x indexed
	err := json.Unmarshal(meta, &x)
	return x, err
}

// indexedOf is what the indexes keep of m.
func indexedOf(m RunMeta) indexed {
	return indexed{Started: m.Started, Tool: m.Tool, Hash: m.Hash, Modules: m.Modules}
}

// refs are the run's entries in the tool index: its tool (hash "" when it
// has none), then each module it required (with a hash), once each.
func (x indexed) refs() []toolRef {
	var out []toolRef
	if x.Tool != "" {
		out = append(out, toolRef{path: x.Tool, hash: x.Hash})
	}
	for _, m := range x.Modules {
		r := toolRef{path: m.Path, hash: m.Hash, module: true}
		if m.Path != "" && m.Hash != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// sameIndex reports whether x and y have the same index entries.
func (x indexed) sameIndex(y indexed) bool {
	return x.Started.Equal(y.Started) && slices.Equal(x.refs(), y.refs())
}

// The second part of a key in the bucket "tools".
const (
	toolByStart   = 0x00
	toolByVersion = 0x01
	toolCounts    = 0x02
	roleRun       = 0x00
	roleModule    = 0x01
)

// appendLP appends s, prefixed with its length.
func appendLP(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// toolRunsPrefix is the prefix of the keys of path's runs (at hash,
// unless "").
func toolRunsPrefix(path, hash string) []byte {
	k := appendLP(nil, path)
	if hash == "" {
		return append(k, toolByStart)
	}
	return append(appendLP(append(k, toolByVersion), hash), roleRun)
}

// toolKeys are ref's keys for the run with start key sk: under its
// version (nil when ref has no hash) and by start (nil for a module).
func toolKeys(ref toolRef, sk []byte) (byVersion, byStart []byte) {
	if ref.hash != "" {
		byVersion = append(versionRolePrefix(ref.path, ref.hash, ref.module), sk...)
	}
	if !ref.module {
		byStart = append(toolRunsPrefix(ref.path, ""), sk...)
	}
	return byVersion, byStart
}

// versionRolePrefix is the prefix of the keys of the runs of path at hash
// (module: of the runs that required it).
func versionRolePrefix(path, hash string, module bool) []byte {
	k := appendLP(append(appendLP(nil, path), toolByVersion), hash)
	if module {
		return append(k, roleModule)
	}
	return append(k, roleRun)
}

// countKey is the key of the counts of ref's version.
func countKey(ref toolRef) []byte {
	return appendLP(append(appendLP(nil, ref.path), toolCounts), ref.hash)
}

// counts reads a version's counts (zero when v is not 16 bytes).
func counts(v []byte) (runs, required int64) {
	if len(v) != 16 {
		return 0, 0
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
}

// countsValue encodes a version's counts.
func countsValue(runs, required int64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(runs)), uint64(required))
}

// readLP reads a length-prefixed string at the start of b.
func readLP(b []byte) (string, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return "", false
	}
	return string(b[w : w+int(n)]), true
}

// startOf reads a start key (page.go's startedKey): the start and the id.
func startOf(sk []byte) (time.Time, string) {
	ns := int64(binary.BigEndian.Uint64(sk[:8]) ^ 1<<63)
	return time.Unix(0, ns).UTC(), string(sk[8:])
}
