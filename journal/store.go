package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Storage. A run's metadata is in the bucket "runs" under its id; its
// entries in "entries"/<run id> under their sequence number (big-endian);
// tool sources in "sources" under their content hash. A request or
// response longer than Options.BlobThreshold is stored once, in a bucket
// of its own "blobs"/<hex SHA-256 of its bytes> under the key "p" (a bucket
// of its own, so that adding a payload rewrites a page of small bucket
// headers, never the pages of other payloads), and the entry names the hash
// instead ("request_blob", "response_blob"); reading an entry puts it back,
// so Entries, Replayer and Export never show a reference. Entries written
// before blobs existed (payloads inline) read as before. The payloads of
// model calls are chunked (chunks.go): each message kept once, in the flat
// bucket "chunks" under its hash (a chunk over 8 KiB in "blobs", as a blob);
// PostgreSQL keeps chunks with the blobs. "meta"/"format" holds the storage
// format: a journal of a newer format is refused at Open.

// DefaultBlobThreshold is Options.BlobThreshold's default: payloads above
// 8 KiB are stored once by content hash. (A payload stored apart takes
// whole 4 KiB pages: below 8 KiB that rounding costs more than repeats
// save.)
const DefaultBlobThreshold = 8 << 10

// storageFormat is the format this package writes and reads: 1 had no
// blobs (and no "meta" bucket), 2 adds them, 3 the run index "started"
// (page.go) and chunked payloads (chunks.go; in bbolt, the "chunks"
// bucket), 4 the tool index (toolindex.go). Older journals are migrated when opened; opening one raises its
// format, so that an older agentos, which would misread a chunked payload,
// refuses it.
const storageFormat = 4

// blob is a payload to keep under its hash.
type blob struct {
	hash string
	data []byte
}

// storedEntry is an Entry as stored: a large payload is a blob reference,
// a chunked one (chunks.go) a skeleton and its chunkSet.
type storedEntry struct {
	Entry
	RequestBlob    string    `json:"request_blob,omitempty"`
	ResponseBlob   string    `json:"response_blob,omitempty"`
	RequestChunks  *chunkSet `json:"request_chunks,omitempty"`
	ResponseChunks *chunkSet `json:"response_chunks,omitempty"`
}

// encodeEntry encodes e for storage: the payloads of a chunked driver
// (chunks.go) as chunks, with ck's memory of the run's earlier payloads
// (nil: none), then a request or response longer than the threshold as a
// blob.
func (j *Journal) encodeEntry(e *Entry, ck *chunker) ([]byte, []blob) {
	c := *e
	var blobs []blob
	var sets [2]*chunkSet
	if ck != nil && j.chunks(e.Driver) {
		for i, side := range []struct {
			name string
			into *json.RawMessage
		}{{"request", &c.Request}, {"response", &c.Response}} {
			if skeleton, set, bs, ok := ck.chunkPayload(e.Seq, side.name, *side.into); ok {
				*side.into, sets[i] = skeleton, set
				blobs = append(blobs, bs...)
			}
		}
	}
	limit := j.opts.BlobThreshold
	if limit == 0 {
		limit = DefaultBlobThreshold
	}
	if sets[0] == nil && sets[1] == nil && (limit < 0 || (len(c.Request) <= limit && len(c.Response) <= limit)) {
		return c.appendJSON(nil), nil
	}
	var refs []byte
	if limit >= 0 && len(c.Request) > limit {
		b := newBlob(c.Request)
		blobs, c.Request = append(blobs, b), nil
		refs = append(append(append(refs, `,"request_blob":"`...), b.hash...), '"')
	}
	if limit >= 0 && len(c.Response) > limit {
		b := newBlob(c.Response)
		blobs, c.Response = append(blobs, b), nil
		refs = append(append(append(refs, `,"response_blob":"`...), b.hash...), '"')
	}
	for i, name := range []string{`,"request_chunks":`, `,"response_chunks":`} {
		if sets[i] != nil {
			v, _ := json.Marshal(sets[i]) // hex hashes and member names: never fails
			refs = append(append(refs, name...), v...)
		}
	}
	out := c.appendJSON(nil)
	out = append(out[:len(out)-1], refs...) // before the closing brace
	return append(out, '}'), blobs
}

func newBlob(data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{hash: hex.EncodeToString(sum[:]), data: data}
}

// decodeEntries reads a run's stored entries (in sequence order), putting
// their blobs and chunks back (getBlob returns the payload kept under a
// hash, nil when there is none). An entry's chunks may continue those of
// any other entry of the run, so the run is read whole.
func decodeEntries(run string, raws [][]byte, getBlob func(hash string) []byte) ([]Entry, error) {
	stored := make([]storedEntry, len(raws))
	d := &runDecoder{run: run, getBlob: getBlob, byseq: map[uint64]*storedEntry{}}
	chunked := false
	for i, v := range raws {
		s, err := decodeStored(v)
		if err != nil {
			return nil, fmt.Errorf("journal: run %s: an entry does not decode (the journal is damaged): %w", run, err)
		}
		for _, ref := range []struct {
			hash string
			into *json.RawMessage
		}{{s.RequestBlob, &s.Request}, {s.ResponseBlob, &s.Response}} {
			if ref.hash == "" {
				continue
			}
			data := getBlob(ref.hash)
			if data == nil {
				return nil, fmt.Errorf("journal: call #%d of run %s refers to payload %s, which the journal lacks (the file is damaged); delete the run with 'agentos runs prune'", s.Seq, run, ref.hash)
			}
			*ref.into = bytes.Clone(data)
		}
		stored[i] = s
		d.byseq[s.Seq] = &stored[i]
		chunked = chunked || s.RequestChunks != nil || s.ResponseChunks != nil
	}
	out := make([]Entry, len(stored))
	if chunked {
		d.chunks, d.lists, d.busy = map[string][]byte{}, map[string][]string{}, map[string]bool{}
	}
	for i := range stored {
		s := &stored[i]
		for _, side := range []struct {
			name string
			set  *chunkSet
			into *json.RawMessage
		}{{"request", s.RequestChunks, &s.Request}, {"response", s.ResponseChunks, &s.Response}} {
			if side.set == nil {
				continue
			}
			full, err := d.fill(s, side.name, *side.into, side.set)
			if err != nil {
				return nil, err
			}
			*side.into = full
		}
		out[i] = s.Entry
	}
	return out, nil
}

// blobRefs returns the blobs and chunks a stored entry refers to itself
// (cheaply: entries without a reference are not decoded). The chunks an
// entry takes from an earlier entry of its run (chunkMember.Base) are that
// entry's references: a run's references are the union of its entries'.
func blobRefs(v []byte) []string {
	if !bytes.Contains(v, []byte(`_blob":"`)) && !bytes.Contains(v, []byte(`_chunks":{`)) {
		return nil
	}
	var s struct {
		RequestBlob    string    `json:"request_blob"`
		ResponseBlob   string    `json:"response_blob"`
		RequestChunks  *chunkSet `json:"request_chunks"`
		ResponseChunks *chunkSet `json:"response_chunks"`
	}
	if json.Unmarshal(v, &s) != nil {
		return nil
	}
	var out []string
	for _, h := range []string{s.RequestBlob, s.ResponseBlob} {
		if h != "" {
			out = append(out, h)
		}
	}
	out = append(out, s.RequestChunks.refs()...)
	return append(out, s.ResponseChunks.refs()...)
}

// PruneOptions choose the finished runs Prune deletes; a run that has not
// ended (status running: in flight, or waiting for recovery) is never
// deleted. Zero fields bound nothing.
type PruneOptions struct {
	// OlderThan deletes the runs that started longer ago than this.
	OlderThan time.Duration
	// KeepRuns keeps only this many finished runs, the most recent.
	KeepRuns int
	// KeepBytes deletes the oldest finished runs until what the journal
	// stores (metadata, entries, payloads, sources) is at most this many
	// bytes.
	KeepBytes int64
}

// PruneReport says what Prune deleted.
type PruneReport struct {
	Runs    int   `json:"runs"`    // runs deleted
	Blobs   int   `json:"blobs"`   // payloads no remaining run refers to, deleted
	Sources int   `json:"sources"` // tool sources no remaining run refers to, deleted
	Bytes   int64 `json:"bytes"`   // stored bytes freed: free pages the file reuses (Compact shrinks it)
	Kept    int   `json:"kept"`    // runs left
}

// runSize is what one run stores, for the byte bound.
type runSize struct {
	meta    RunMeta
	own     int64    // metadata and entries
	blobs   []string // payloads it refers to
	deleted bool
}

// Prune deletes the finished runs opts selects, then the payloads and
// sources no remaining run refers to (a source put by this Journal since it
// was opened is kept: its run may be starting). A bbolt file does not
// shrink: bbolt reuses the freed pages for later writes; Compact gives them
// back to the file system (PostgreSQL: autovacuum reuses the space).
// Prune is one transaction: recording waits while it runs (on PostgreSQL,
// the recording of every node sharing the journal).
func (j *Journal) Prune(opts PruneOptions) (PruneReport, error) {
	var rep PruneReport
	if opts.OlderThan <= 0 && opts.KeepRuns <= 0 && opts.KeepBytes <= 0 {
		return rep, nil
	}
	// Cheap first: decide from the runs alone, and skip the full pass when
	// nothing is to go.
	runs, err := j.Runs()
	if err != nil {
		return rep, err
	}
	now := j.now()
	byAge := selectRuns(runs, opts, now)
	if len(byAge) == 0 && (opts.KeepBytes <= 0 || j.st.liveBytes() <= opts.KeepBytes) {
		rep.Kept = len(runs)
		return rep, nil
	}
	err = j.read(func(st store) error {
		return st.prune(func(scan *pruneScan) pruneDrop {
			rep = PruneReport{}
			return j.decidePrune(scan, opts, now, &rep)
		})
	})
	return rep, err
}

// ended reports whether a run with status may be pruned: a run still
// running, or quarantined (waiting for 'agentos recover --run'), is never
// deleted.
func ended(status string) bool {
	return status != StatusRunning && status != StatusQuarantined
}

// selectRuns returns the ids of the finished runs that age or count select.
func selectRuns(runs []RunMeta, opts PruneOptions, now time.Time) map[string]bool {
	out := map[string]bool{}
	finished := 0
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		r := runs[i]
		if !ended(r.Status) {
			continue
		}
		finished++
		if (opts.OlderThan > 0 && now.Sub(r.Started) > opts.OlderThan) || (opts.KeepRuns > 0 && finished > opts.KeepRuns) {
			out[r.ID] = true
		}
	}
	return out
}

// pruneScan is what Prune decides from: every run's size and the payloads
// it refers to, and every payload's and source's size.
type pruneScan struct {
	runs       []*runSize
	blobSize   map[string]int64 // hash -> stored bytes
	sourceSize map[string]int64 // hash -> stored bytes
}

// pruneDrop is what Prune deletes.
type pruneDrop struct {
	runs, blobs, sources []string
}

// addRefs adds the payloads stored entry v refers to (seen: the ones
// already added).
func (r *runSize) addRefs(seen map[string]bool, v []byte) {
	for _, h := range blobRefs(v) {
		if !seen[h] {
			seen[h] = true
			r.blobs = append(r.blobs, h)
		}
	}
}

// decidePrune chooses what to delete from scan, filling rep: one decision
// whatever the storage.
func (j *Journal) decidePrune(scan *pruneScan, opts PruneOptions, now time.Time, rep *PruneReport) pruneDrop {
	runs := scan.runs
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].meta.Started.Before(runs[b].meta.Started) })
	t := newPruneTally(scan, rep)
	metas := make([]RunMeta, len(runs))
	for i, r := range runs {
		metas[i] = r.meta
	}
	selected := selectRuns(metas, opts, now)
	for _, r := range runs {
		if selected[r.meta.ID] {
			t.drop(r)
		}
	}
	if opts.KeepBytes > 0 {
		t.dropUntil(opts.KeepBytes)
	}
	var out pruneDrop
	var used map[string]bool
	out.runs, used = t.dropped()
	out.blobs = t.orphanBlobs()
	out.sources = j.unusedSources(scan, used, rep)
	return out
}

// pruneTally is decidePrune's count of the bytes the journal would hold
// as it drops runs: a payload's bytes go with the last run referring to
// it. rep counts what is dropped.
type pruneTally struct {
	scan  *pruneScan
	refs  map[string]int // payload hash -> runs kept that refer to it
	total int64
	rep   *PruneReport
}

func newPruneTally(scan *pruneScan, rep *PruneReport) *pruneTally {
	t := &pruneTally{scan: scan, refs: map[string]int{}, rep: rep}
	for _, r := range scan.runs {
		t.total += r.own
		for _, h := range r.blobs {
			t.refs[h]++
		}
	}
	for _, size := range scan.blobSize {
		t.total += size
	}
	for _, size := range scan.sourceSize {
		t.total += size
	}
	return t
}

// drop deletes run r, and the payloads only it referred to.
func (t *pruneTally) drop(r *runSize) {
	r.deleted = true
	t.total -= r.own
	t.rep.Bytes += r.own
	for _, h := range r.blobs {
		if t.refs[h]--; t.refs[h] == 0 {
			t.total -= t.scan.blobSize[h]
		}
	}
}

// dropUntil drops ended runs, oldest first, until the journal holds at
// most keep bytes.
func (t *pruneTally) dropUntil(keep int64) {
	for _, r := range t.scan.runs { // oldest first
		if t.total <= keep {
			return
		}
		if !r.deleted && ended(r.meta.Status) {
			t.drop(r)
		}
	}
}

// dropped counts the runs dropped and kept in rep, and returns the ids of
// the dropped ones and the sources the kept ones use: their tool's and,
// for a pinned run, its modules' (they replay from them).
func (t *pruneTally) dropped() (ids []string, used map[string]bool) {
	used = map[string]bool{}
	for _, r := range t.scan.runs {
		if r.deleted {
			t.rep.Runs++
			ids = append(ids, r.meta.ID)
			continue
		}
		t.rep.Kept++
		used[r.meta.Hash] = true
		for _, m := range r.meta.Modules {
			used[m.Hash] = true
		}
	}
	return ids, used
}

// orphanBlobs counts in rep, and returns sorted, the payloads no kept run
// refers to.
func (t *pruneTally) orphanBlobs() []string {
	var out []string
	for h, size := range t.scan.blobSize {
		if t.refs[h] > 0 {
			continue
		}
		t.rep.Blobs++
		t.rep.Bytes += size
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// unusedSources counts in rep, and returns sorted, the sources no kept run
// uses; a source put by this Journal since it was opened is kept (its run
// may be starting).
func (j *Journal) unusedSources(scan *pruneScan, used map[string]bool, rep *PruneReport) []string {
	var out []string
	for h, size := range scan.sourceSize {
		if _, fresh := j.sources.Load(h); !used[h] && !fresh {
			rep.Sources++
			rep.Bytes += size
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}
