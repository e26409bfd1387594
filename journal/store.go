package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
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
// before blobs existed (payloads inline) read as before. "meta"/"format"
// holds the storage format: a journal of a newer format is refused at Open.

// DefaultBlobThreshold is Options.BlobThreshold's default: payloads above
// 8 KiB are stored once by content hash. (A payload stored apart takes
// whole 4 KiB pages: below 8 KiB that rounding costs more than repeats
// save.)
const DefaultBlobThreshold = 8 << 10

// storageFormat is the format this package writes and reads: 1 had no
// blobs (and no "meta" bucket), 2 adds them. Format 1 journals read as 2.
const storageFormat = 2

var (
	bucketBlobs = []byte("blobs") // hex sha256 -> bucket {"p": payload}
	bucketMeta  = []byte("meta")  // "format" -> storageFormat
	keyFormat   = []byte("format")
	keyPayload  = []byte("p")
)

// blob is a payload to keep under its hash.
type blob struct {
	hash string
	data []byte
}

// storedEntry is an Entry as stored: a large payload is a blob reference.
type storedEntry struct {
	Entry
	RequestBlob  string `json:"request_blob,omitempty"`
	ResponseBlob string `json:"response_blob,omitempty"`
}

// encodeEntry encodes e for storage, moving a request or response longer
// than the threshold into blobs.
func (j *Journal) encodeEntry(e *Entry) ([]byte, []blob) {
	limit := j.opts.BlobThreshold
	if limit == 0 {
		limit = DefaultBlobThreshold
	}
	if limit < 0 || (len(e.Request) <= limit && len(e.Response) <= limit) {
		return e.appendJSON(nil), nil
	}
	var blobs []blob
	var refs []byte
	c := *e
	if len(c.Request) > limit {
		b := newBlob(c.Request)
		blobs, c.Request = append(blobs, b), nil
		refs = append(append(append(refs, `,"request_blob":"`...), b.hash...), '"')
	}
	if len(c.Response) > limit {
		b := newBlob(c.Response)
		blobs, c.Response = append(blobs, b), nil
		refs = append(append(append(refs, `,"response_blob":"`...), b.hash...), '"')
	}
	out := c.appendJSON(nil)
	out = append(out[:len(out)-1], refs...) // before the closing brace
	return append(out, '}'), blobs
}

func newBlob(data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{hash: hex.EncodeToString(sum[:]), data: data}
}

// putBlobs keeps each blob unless the journal has it already. The bytes
// travel with every write that refers to them, so that a blob deleted by a
// concurrent Prune is put back by the next entry needing it.
func putBlobs(tx *bolt.Tx, blobs []blob) error {
	all := tx.Bucket(bucketBlobs)
	for _, x := range blobs {
		if all.Bucket([]byte(x.hash)) != nil {
			continue
		}
		b, err := all.CreateBucket([]byte(x.hash))
		if err != nil {
			return err
		}
		if err := b.Put(keyPayload, x.data); err != nil {
			return err
		}
	}
	return nil
}

// getBlob returns the payload kept under hash (nil: none), valid for the
// transaction only.
func getBlob(tx *bolt.Tx, hash string) []byte {
	b := tx.Bucket(bucketBlobs).Bucket([]byte(hash))
	if b == nil {
		return nil
	}
	return b.Get(keyPayload)
}

// decodeEntry reads a stored entry, putting its blobs back.
func decodeEntry(tx *bolt.Tx, run string, v []byte) (Entry, error) {
	var s storedEntry
	if err := json.Unmarshal(v, &s); err != nil {
		return Entry{}, err
	}
	for _, ref := range []struct {
		hash string
		into *json.RawMessage
	}{{s.RequestBlob, &s.Request}, {s.ResponseBlob, &s.Response}} {
		if ref.hash == "" {
			continue
		}
		data := getBlob(tx, ref.hash)
		if data == nil {
			return Entry{}, fmt.Errorf("journal: call #%d of run %s refers to payload %s, which the journal lacks (the file is damaged); delete the run with 'agentos runs prune'", s.Seq, run, ref.hash)
		}
		*ref.into = bytes.Clone(data)
	}
	return s.Entry, nil
}

// blobRefs returns the blobs a stored entry refers to (cheaply: entries
// without a reference are not decoded).
func blobRefs(v []byte) []string {
	if !bytes.Contains(v, []byte(`_blob":"`)) {
		return nil
	}
	var s struct {
		RequestBlob  string `json:"request_blob"`
		ResponseBlob string `json:"response_blob"`
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
	return out
}

// initStorage creates the buckets and checks (or writes) the format.
func initStorage(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketRuns, bucketEntries, bucketSources, bucketBlobs, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keyFormat); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n > storageFormat {
			return fmt.Errorf("%w: it has storage format %s, newer than this agentos reads (%d): upgrade agentos to read it, or use another journal file", ErrFormat, v, storageFormat)
		}
		return nil
	}
	return meta.Put(keyFormat, []byte(strconv.Itoa(storageFormat)))
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
// was opened is kept: its run may be starting). The file does not shrink:
// bbolt reuses the freed pages for later writes; Compact gives them back to
// the file system. Prune is one transaction: recording waits while it runs.
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
	if len(byAge) == 0 && (opts.KeepBytes <= 0 || j.liveBytes() <= opts.KeepBytes) {
		rep.Kept = len(runs)
		return rep, nil
	}
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return rep, ErrClosed
	}
	err = j.db.Update(func(tx *bolt.Tx) error {
		rep = PruneReport{}
		return j.prune(tx, opts, now, &rep)
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

// liveBytes estimates what the file holds: its size less its free pages.
func (j *Journal) liveBytes() int64 {
	fi, err := os.Stat(j.db.Path())
	if err != nil {
		return 0
	}
	s := j.db.Stats()
	return fi.Size() - int64(s.FreePageN+s.PendingPageN)*int64(j.db.Info().PageSize)
}

func (j *Journal) prune(tx *bolt.Tx, opts PruneOptions, now time.Time, rep *PruneReport) error {
	runsB, entriesB, blobsB, sourcesB := tx.Bucket(bucketRuns), tx.Bucket(bucketEntries), tx.Bucket(bucketBlobs), tx.Bucket(bucketSources)
	var runs []*runSize
	var total int64
	err := runsB.ForEach(func(k, v []byte) error {
		r := &runSize{own: int64(len(k) + len(v))}
		if err := json.Unmarshal(v, &r.meta); err != nil {
			return err
		}
		if b := entriesB.Bucket(k); b != nil {
			seen := map[string]bool{}
			if err := b.ForEach(func(ek, ev []byte) error {
				r.own += int64(len(ek) + len(ev))
				for _, h := range blobRefs(ev) {
					if !seen[h] {
						seen[h] = true
						r.blobs = append(r.blobs, h)
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		total += r.own
		runs = append(runs, r)
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].meta.Started.Before(runs[b].meta.Started) })
	refs := map[string]int{}
	for _, r := range runs {
		for _, h := range r.blobs {
			refs[h]++
		}
	}
	blobSize := map[string]int64{}
	if err := blobsB.ForEachBucket(func(k []byte) error {
		size := int64(len(k) + len(getBlob(tx, string(k))))
		blobSize[string(k)] = size
		total += size
		return nil
	}); err != nil {
		return err
	}
	if err := sourcesB.ForEach(func(k, v []byte) error {
		total += int64(len(k) + len(v))
		return nil
	}); err != nil {
		return err
	}
	drop := func(r *runSize) {
		r.deleted = true
		total -= r.own
		rep.Bytes += r.own
		for _, h := range r.blobs {
			if refs[h]--; refs[h] == 0 {
				total -= blobSize[h]
			}
		}
	}
	metas := make([]RunMeta, len(runs))
	for i, r := range runs {
		metas[i] = r.meta
	}
	selected := selectRuns(metas, opts, now)
	for _, r := range runs {
		if selected[r.meta.ID] {
			drop(r)
		}
	}
	if opts.KeepBytes > 0 {
		for _, r := range runs { // oldest first
			if total <= opts.KeepBytes {
				break
			}
			if !r.deleted && ended(r.meta.Status) {
				drop(r)
			}
		}
	}
	used := map[string]bool{}
	for _, r := range runs {
		if r.deleted {
			rep.Runs++
			if err := runsB.Delete([]byte(r.meta.ID)); err != nil {
				return err
			}
			if err := entriesB.DeleteBucket([]byte(r.meta.ID)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
			continue
		}
		rep.Kept++
		used[r.meta.Hash] = true
	}
	for h, size := range blobSize {
		if refs[h] > 0 {
			continue
		}
		rep.Blobs++
		rep.Bytes += size
		if err := blobsB.DeleteBucket([]byte(h)); err != nil {
			return err
		}
	}
	var stale [][]byte
	_ = sourcesB.ForEach(func(k, v []byte) error {
		if _, fresh := j.sources.Load(string(k)); !used[string(k)] && !fresh {
			stale = append(stale, bytes.Clone(k))
			rep.Bytes += int64(len(k) + len(v))
		}
		return nil
	})
	for _, k := range stale {
		rep.Sources++
		if err := sourcesB.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// compactHook, when set (tests), runs when Compact has written the
// compacted file and still holds the old one's lock, before the rename.
var compactHook func()

// Compact rewrites the journal file at path without its free pages (left
// by Prune), in place of the old one, and returns the file's size before
// and after. IMPORTANT: no process may have the journal open: Compact holds
// the file's lock throughout and fails when another process holds it (a
// serving node). A journal opened while Compact replaces the file opens
// the new file (Open checks that the file it locked is still at path).
func Compact(path string) (before, after int64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compacting journal %s: %w", path, err)
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return 0, 0, fmt.Errorf("compacting journal %s: another agentos process holds it open (a serving node?); stop it, then compact", path)
		}
		return 0, 0, fmt.Errorf("compacting journal %s: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".compact"
	_ = os.Remove(tmp) // a previous compaction that died
	dst, err := bolt.Open(tmp, 0o600, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("compacting journal %s: %w", path, err)
	}
	if err := bolt.Compact(dst, src, 64<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compacting journal %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compacting journal %s: %w", path, err)
	}
	if compactHook != nil {
		compactHook()
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("compacting journal %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil { // the rename, durable
		_ = d.Sync()
		d.Close()
	}
	nfi, err := os.Stat(path)
	if err != nil {
		return fi.Size(), 0, err
	}
	return fi.Size(), nfi.Size(), nil
}
