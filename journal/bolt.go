package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// boltStore is the embedded storage: one bbolt file, locked by one process
// at a time. See the storage layout at the top of store.go.
type boltStore struct {
	db *bolt.DB
	// fences are the runs' fencing tokens in this process (see claim),
	// changed only inside write transactions (which bbolt runs one at a
	// time), under fenceMu.
	fenceMu sync.Mutex
	fences  map[string]int64
	// pageSize is the file's page size, read at open: IMPORTANT: bbolt's
	// Info reads its mapping unguarded, which a commit that grows the file
	// replaces, so it is read only before the journal writes.
	pageSize int
}

// newBoltStore wraps an open db, before anything writes to it.
func newBoltStore(db *bolt.DB) *boltStore {
	return &boltStore{db: db, fences: map[string]int64{}, pageSize: db.Info().PageSize}
}

var (
	bucketRuns    = []byte("runs")
	bucketEntries = []byte("entries")
	bucketSources = []byte("sources") // content hash -> tool source
	bucketBlobs   = []byte("blobs")   // hex sha256 -> bucket {"p": payload}
	bucketChunks  = []byte("chunks")  // hex sha256 -> payload of at most flatBlobMax bytes
	bucketMeta    = []byte("meta")    // "format" -> storageFormat
	bucketStarted = []byte("started") // the runs by start, with their call counts (page.go)
	bucketTools   = []byte("tools")   // the runs by tool and version (toolindex.go)
	keyFormat     = []byte("format")
	keyPayload    = []byte("p")
)

// Open opens (creating if needed) the journal file at path: the embedded
// bbolt journal, held by this process alone (ErrLocked while another
// process holds it). See OpenPostgres for a journal several nodes share.
func Open(path string, opts Options) (*Journal, error) {
	var db *bolt.DB
	for attempt := 0; ; attempt++ {
		was, statErr := os.Stat(path)
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoSync: !opts.Durability.fsyncs(), NoFreelistSync: true, ReadOnly: opts.ReadOnly})
		if err != nil {
			if errors.Is(err, bolt.ErrTimeout) {
				return nil, fmt.Errorf("opening journal %s: %w; stop it or use another journal file", path, ErrLocked)
			}
			return nil, fmt.Errorf("opening journal %s: %w", path, err)
		}
		// Compact replaces the file while holding the old one's lock: a
		// lock won on a file no longer at path is the old file's.
		is, err := os.Stat(path)
		if statErr != nil || err == nil && os.SameFile(was, is) {
			break
		}
		db.Close()
		if attempt == 3 {
			return nil, fmt.Errorf("opening journal %s: the file keeps being replaced (a compaction?); try again", path)
		}
	}
	if opts.ReadOnly {
		if err := db.View(checkFormat); err != nil {
			db.Close()
			if errors.Is(err, errMigrate) {
				opts.ReadOnly = false // migrate it once, for writing
				return Open(path, opts)
			}
			return nil, fmt.Errorf("opening journal %s: %w", path, err)
		}
		return newJournal(newBoltStore(db), opts), nil
	}
	// IMPORTANT: a journal already current is only read here. A commit,
	// even of nothing, writes bbolt's meta page and fdatasyncs it: every
	// open (each replay's) would wait for the disk.
	if db.View(storageCurrent) == nil {
		return newJournal(newBoltStore(db), opts), nil
	}
	if err := db.Update(initStorage); err != nil {
		db.Close()
		return nil, fmt.Errorf("initialising journal %s: %w", path, err)
	}
	return newJournal(newBoltStore(db), opts), nil
}

// errMigrate: a journal opened read-only needs its storage migrated first.
var errMigrate = errors.New("the journal's storage format is older than this agentos writes")

// checkFormat checks a journal opened read-only: errMigrate unless it has
// this storage format (and so every bucket).
func checkFormat(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return errMigrate
	}
	v := meta.Get(keyFormat)
	n, err := strconv.Atoi(string(v))
	switch {
	case v == nil || err == nil && n < storageFormat:
		return errMigrate
	case err != nil || n > storageFormat:
		return fmt.Errorf("%w: it has storage format %s, newer than this agentos reads (%d): upgrade agentos to read it, or use another journal file", ErrFormat, v, storageFormat)
	}
	return nil
}

// storageCurrent says whether tx's journal has every bucket and this
// storage format: initStorage would change nothing (errMigrate otherwise).
func storageCurrent(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketRuns, bucketEntries, bucketSources, bucketBlobs, bucketChunks, bucketTools} {
		if tx.Bucket(b) == nil {
			return errMigrate
		}
	}
	return checkFormat(tx)
}

// initStorage creates the buckets and checks (or writes) the format,
// migrating an older one: a journal of format 2 or 1 gets its run index
// (format 3), one of format 3 or older its tool index (format 4).
func initStorage(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketRuns, bucketEntries, bucketSources, bucketBlobs, bucketChunks, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	from := 0
	if v := meta.Get(keyFormat); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n > storageFormat {
			return fmt.Errorf("%w: it has storage format %s, newer than this agentos reads (%d): upgrade agentos to read it, or use another journal file", ErrFormat, v, storageFormat)
		}
		if n == storageFormat {
			return nil
		}
		from = n
	}
	if from < 3 {
		if err := indexRuns(tx); err != nil {
			return err
		}
	}
	if err := indexTools(tx); err != nil {
		return err
	}
	return meta.Put(keyFormat, []byte(strconv.Itoa(storageFormat)))
}

// indexTools builds the index "tools" from the runs' metadata (once, when
// a journal of format 3 or older is opened).
func indexTools(tx *bolt.Tx) error {
	_ = tx.DeleteBucket(bucketTools) // as indexRuns: be sure it starts empty
	idx, err := tx.CreateBucket(bucketTools)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
		x, err := decodeIndexed(v)
		if err != nil {
			return fmt.Errorf("journal: indexing run %s by tool: its metadata does not decode (%w); delete it with 'agentos runs prune' or restore the file", k, err)
		}
		return putToolKeys(idx, x, string(k))
	})
}

// toolKeyValue is the value of a key of the index "tools" (not empty:
// Get tells a key there from none).
var toolKeyValue = []byte{1}

// putToolKeys puts the tool index's keys of run id, whose metadata is x,
// counting each version key it adds.
func putToolKeys(idx *bolt.Bucket, x indexed, id string) error {
	sk := startedKey(x.Started, id)
	for _, ref := range x.refs() {
		byVersion, byStart := toolKeys(ref, sk)
		if byStart != nil {
			if err := idx.Put(byStart, toolKeyValue); err != nil {
				return err
			}
		}
		if byVersion == nil || idx.Get(byVersion) != nil {
			continue
		}
		if err := idx.Put(byVersion, toolKeyValue); err != nil {
			return err
		}
		if err := addCount(idx, ref, 1); err != nil {
			return err
		}
	}
	return nil
}

// deleteToolKeys deletes the tool index's keys of run id, whose metadata
// was x, discounting each version key it deletes.
func deleteToolKeys(idx *bolt.Bucket, x indexed, id string) error {
	sk := startedKey(x.Started, id)
	for _, ref := range x.refs() {
		byVersion, byStart := toolKeys(ref, sk)
		if byStart != nil {
			if err := idx.Delete(byStart); err != nil {
				return err
			}
		}
		if byVersion == nil || idx.Get(byVersion) == nil {
			continue
		}
		if err := idx.Delete(byVersion); err != nil {
			return err
		}
		if err := addCount(idx, ref, -1); err != nil {
			return err
		}
	}
	return nil
}

// addCount adds delta to the runs (or, for a module, the requirings) of
// ref's version; a version counted down to nothing loses its counts.
func addCount(idx *bolt.Bucket, ref toolRef, delta int64) error {
	k := countKey(ref)
	runs, required := counts(idx.Get(k))
	if ref.module {
		required += delta
	} else {
		runs += delta
	}
	if runs <= 0 && required <= 0 {
		return idx.Delete(k)
	}
	return idx.Put(k, countsValue(runs, required))
}

// indexRuns builds the index "started" from the runs' metadata (once,
// when a journal of an older format is opened). The counts are left
// unknown: a listing counts the runs it shows.
func indexRuns(tx *bolt.Tx) error {
	_ = tx.DeleteBucket(bucketStarted) // a partial index of an interrupted migration: none is committed, but be sure
	idx, err := tx.CreateBucket(bucketStarted)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
		started, err := startedOf(v)
		if err != nil {
			return fmt.Errorf("journal: indexing run %s: its metadata does not decode (%w); delete it with 'agentos runs prune' or restore the file", k, err)
		}
		return idx.Put(startedKey(started, string(k)), countValue(0, false))
	})
}

func (s *boltStore) path() string { return s.db.Path() }

// close closes the file, first writing bbolt's free-page list in one last
// commit if the file lacks it. IMPORTANT: an open for writing rebuilds that
// list by walking every page of the file unless the last commit wrote it,
// and the journal's commits leave it out (NoFreelistSync: each commit
// writes less); on a journal of 100,000 runs the walk took half a second
// and read the whole file into memory (400 MB) for every 'agentos exec'
// without a node. After a clean close the next open reads the list
// instead; after a crash it walks the file, as before. A close after an
// open that wrote nothing commits nothing (TestOpenCurrentWritesNothing).
func (s *boltStore) close() error {
	var ferr error
	if !s.db.IsReadOnly() {
		if synced, err := syncedFreelist(s.db.Path()); err != nil || !synced {
			s.db.NoFreelistSync = false // no transaction is open: the writer has stopped
			if err := s.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
				ferr = fmt.Errorf("journal %s: writing the free-page list at close (the next open rebuilds it): %w", s.db.Path(), err)
			}
		}
	}
	return errors.Join(ferr, s.db.Close())
}

// syncedFreelist reads the bbolt file's current meta page (of the two, the
// one with the higher transaction id) and reports whether it points at a
// free-page list. Layout (go.etcd.io/bbolt internal/common: Page, Meta): a
// 16-byte page header, then magic, version, page size, flags (4 bytes
// each), the root bucket (16), the free-list page id (8), the high-water
// page id (8), the transaction id (8); no list is page id 2^64-1.
func syncedFreelist(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	const header, pageSizeAt, freelistAt, txidAt = 16, 8, 32, 48
	m := make([]byte, header+txidAt+8)
	if _, err := f.ReadAt(m, 0); err != nil {
		return false, err
	}
	freelist, txid := binary.LittleEndian.Uint64(m[header+freelistAt:]), binary.LittleEndian.Uint64(m[header+txidAt:])
	if _, err := f.ReadAt(m, int64(binary.LittleEndian.Uint32(m[header+pageSizeAt:]))); err != nil {
		return false, err
	}
	if binary.LittleEndian.Uint64(m[header+txidAt:]) > txid {
		freelist = binary.LittleEndian.Uint64(m[header+freelistAt:])
	}
	return freelist != ^uint64(0), nil
}

func (s *boltStore) shared() bool { return false }

func (s *boltStore) apply(batch []*write, _ string, _ time.Time) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		s.fenceMu.Lock()
		defer s.fenceMu.Unlock()
		created := map[string]bool{} // a new run's token is 1, its writes may share its batch
		for _, w := range batch {
			if w.create {
				created[w.run] = true
			}
			cur := s.fences[w.run]
			if created[w.run] {
				cur = 1
			}
			if w.fence > 0 && cur != w.fence {
				return fmt.Errorf("%w: run %s was claimed again after this Run's claim (token %d, now %d): it may no longer write it", ErrFenced, w.run, w.fence, cur)
			}
		}
		if err := applyAll(tx, batch); err != nil {
			return err
		}
		for id := range created {
			s.fences[id] = 1
		}
		return nil
	})
}

// applyAll puts a batch of writes in one transaction.
func applyAll(tx *bolt.Tx, batch []*write) error {
	runs, entries := tx.Bucket(bucketRuns), tx.Bucket(bucketEntries)
	for _, w := range batch {
		if w.run == "" {
			return fmt.Errorf("journal: a write without a run id or hash")
		}
		if w.source != nil && tx.Bucket(bucketSources).Get([]byte(w.run)) == nil {
			if err := tx.Bucket(bucketSources).Put([]byte(w.run), w.source); err != nil {
				return err
			}
		}
		if err := putBlobs(tx, w.blobs); err != nil {
			return err
		}
		if w.meta != nil {
			if w.create && runs.Get([]byte(w.run)) != nil {
				return fmt.Errorf("%w: %q", errRunExists, w.run)
			}
			if err := indexRun(tx, w); err != nil {
				return err
			}
			if err := runs.Put([]byte(w.run), w.meta); err != nil {
				return err
			}
		}
		if w.entry != nil {
			b, err := entries.CreateBucketIfNotExists([]byte(w.run))
			if err != nil {
				return err
			}
			b.FillPercent = 1 // a run's calls come in sequence order: full pages
			if err := b.Put(seqKey(w.seq), w.entry); err != nil {
				return err
			}
		}
		if w.reset {
			if err := entries.DeleteBucket([]byte(w.run)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
		}
	}
	return nil
}

// indexRun keeps w's run in the indexes "started" and "tools" (before its
// metadata is written: a run whose start, tool, version or modules
// changed, a run imported over another with its id, loses its old keys),
// with its call count when w ends it. The entries of the batch are already
// in: a run's end is queued after its calls.
func indexRun(tx *bolt.Tx, w *write) error {
	x := w.index
	idx, tools := tx.Bucket(bucketStarted), tx.Bucket(bucketTools)
	key := startedKey(w.started, w.run)
	fresh := true // no old keys to replace
	if old := tx.Bucket(bucketRuns).Get([]byte(w.run)); !w.create && old != nil {
		was, err := decodeIndexed(old)
		if err != nil {
			return fmt.Errorf("journal: re-indexing run %s: its stored metadata does not decode: %w", w.run, err)
		}
		if fresh = !was.sameIndex(x); fresh {
			if err := unindexRun(idx, tools, was, w.run); err != nil {
				return err
			}
		}
	}
	if fresh {
		if err := putToolKeys(tools, x, w.run); err != nil {
			return err
		}
	}
	n, known := 0, w.ended
	if known {
		n = countEntries(tx, w.run)
	}
	return idx.Put(key, countValue(n, known))
}

// unindexRun deletes run id's keys in the indexes "started" and "tools"
// (its metadata was x).
func unindexRun(started, tools *bolt.Bucket, x indexed, id string) error {
	if err := started.Delete(startedKey(x.Started, id)); err != nil {
		return err
	}
	return deleteToolKeys(tools, x, id)
}

// countEntries is how many calls run id recorded. (A cursor, not
// Bucket.Stats: Stats reads the committed pages only, not the writes of
// the transaction it is in.)
func countEntries(tx *bolt.Tx, id string) int {
	b := tx.Bucket(bucketEntries).Bucket([]byte(id))
	if b == nil {
		return 0
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// runsPage lists up to n runs past at from the index, each with its count
// (counted here when the index lacks it).
func (s *boltStore) runsPage(at runCursor, n int, oldest bool) ([]RunMeta, error) {
	var out []RunMeta
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketStarted).Cursor()
		step := c.Prev
		if oldest {
			step = c.Next
		}
		var k, v []byte
		switch {
		case at.id == "" && oldest:
			k, v = c.First()
		case at.id == "":
			k, v = c.Last()
		default:
			// Seek lands on the cursor's own key, or on the first key
			// after it (when that run is gone).
			key := startedKey(at.started, at.id)
			k, v = c.Seek(key)
			switch {
			case k == nil && !oldest:
				k, v = c.Last()
			case k != nil && !oldest:
				k, v = c.Prev()
			case k != nil && bytes.Equal(k, key):
				k, v = c.Next()
			}
		}
		for ; k != nil && len(out) < n; k, v = step() {
			m, err := listedRun(tx, k[8:], v)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// listedRun reads run id for a listing, with its count (count: its value
// in the index "started"; counted here when it lacks it).
func listedRun(tx *bolt.Tx, id, count []byte) (RunMeta, error) {
	raw := tx.Bucket(bucketRuns).Get(id)
	if raw == nil {
		return RunMeta{}, fmt.Errorf("journal: the run index names run %s, which the journal lacks (the file is damaged); 'agentos doctor' checks it", id)
	}
	var m RunMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return RunMeta{}, fmt.Errorf("journal: run %s: its metadata does not decode: %w", id, err)
	}
	calls, known := storedCount(count)
	if !known || m.Status == StatusRunning {
		calls = countEntries(tx, string(id))
	}
	m.Calls = calls
	return m, nil
}

// toolRunsPage lists up to n runs of path (at hash) past at, newest
// first, from the index "tools".
func (s *boltStore) toolRunsPage(path, hash string, at runCursor, n int) ([]RunMeta, error) {
	var out []RunMeta
	prefix := toolRunsPrefix(path, hash)
	err := s.db.View(func(tx *bolt.Tx) error {
		c, started := tx.Bucket(bucketTools).Cursor(), tx.Bucket(bucketStarted)
		var k []byte
		if at.id == "" {
			k, _ = c.Seek(prefixEnd(prefix))
		} else {
			k, _ = c.Seek(append(slices.Clone(prefix), startedKey(at.started, at.id)...))
		}
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev() // the newest key before the cursor
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < n; k, _ = c.Prev() {
			sk := k[len(prefix):]
			m, err := listedRun(tx, sk[8:], started.Get(sk))
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// prefixEnd is the first key after every key that starts with prefix
// (nil: none, Seek then finds no key).
func prefixEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i]++; end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// versionsOf reads path's versions from the index "tools": a version's
// counts, then the first and last key of its runs and of its requirings.
func (s *boltStore) versionsOf(path string) ([]Version, error) {
	var out []Version
	prefix := append(appendLP(nil, path), toolCounts)
	err := s.db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketTools)
		c, ends := idx.Cursor(), idx.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			hash, ok := readLP(k[len(prefix):])
			if !ok {
				return fmt.Errorf("journal: the tool index holds a damaged key %q; 'agentos doctor' checks the journal", k)
			}
			runs, required := counts(v)
			ver := Version{Hash: hash, Runs: int(runs), Required: int(required)}
			var latest []byte
			for _, module := range []bool{false, true} {
				latest = versionEnds(ends, versionRolePrefix(path, hash, module), &ver, latest)
			}
			out = append(out, ver)
		}
		return nil
	})
	return out, err
}

// versionEnds widens v's First, Last and LastRun with the first and last
// key under p (latest: the start key of v's latest run so far, returned
// updated).
func versionEnds(c *bolt.Cursor, p []byte, v *Version, latest []byte) []byte {
	k, _ := c.Seek(p)
	if k == nil || !bytes.HasPrefix(k, p) {
		return latest
	}
	if first, _ := startOf(k[len(p):]); v.First.IsZero() || first.Before(v.First) {
		v.First = first
	}
	if k, _ = c.Seek(prefixEnd(p)); k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if sk := k[len(p):]; bytes.Compare(sk, latest) > 0 {
		v.Last, v.LastRun = startOf(sk)
		latest = sk
	}
	return latest
}

// flatBlobMax is the size up to which a payload (a chunk, mostly) is kept
// in the flat "chunks" bucket, many to a page; a larger one gets a bucket
// of its own under "blobs" (its pages are never rewritten when another
// payload is added).
const flatBlobMax = DefaultBlobThreshold

// putBlobs keeps each blob unless the journal has it already. The bytes
// travel with every write that refers to them, so that a blob deleted by a
// concurrent Prune is put back by the next entry needing it.
func putBlobs(tx *bolt.Tx, blobs []blob) error {
	all, flat := tx.Bucket(bucketBlobs), tx.Bucket(bucketChunks)
	for _, x := range blobs {
		if getBlob(tx, x.hash) != nil {
			continue
		}
		if len(x.data) <= flatBlobMax {
			if err := flat.Put([]byte(x.hash), x.data); err != nil {
				return err
			}
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
	if v := tx.Bucket(bucketChunks).Get([]byte(hash)); v != nil {
		return v
	}
	b := tx.Bucket(bucketBlobs).Bucket([]byte(hash))
	if b == nil {
		return nil
	}
	return b.Get(keyPayload)
}

func (s *boltStore) runs() ([]RunMeta, error) {
	var out []RunMeta
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).ForEach(func(_, v []byte) error {
			var m RunMeta
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
	})
	return out, err
}

// lastRunID is the greatest run id the file holds that starts with a
// digit, as generated ids do ("" for none): ids given in another form
// ("restored-…") sort above them and can never equal one.
func (s *boltStore) lastRunID() (string, error) {
	var last string
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		k, _ := c.Seek([]byte(":")) // the first key past the digits
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		last = string(k)
		return nil
	})
	return last, err
}

func (s *boltStore) prefixed(id string) ([]RunMeta, error) {
	var found []RunMeta
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		for k, v := c.Seek([]byte(id)); k != nil && bytes.HasPrefix(k, []byte(id)); k, v = c.Next() {
			var m RunMeta
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			found = append(found, m)
		}
		return nil
	})
	return found, err
}

func (s *boltStore) exists(id string) (bool, error) {
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketRuns).Get([]byte(id)) != nil
		return nil
	})
	return found, err
}

func (s *boltStore) entries(id string) ([]Entry, error) {
	var out []Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		var raws [][]byte
		if err := b.ForEach(func(_, v []byte) error {
			raws = append(raws, v)
			return nil
		}); err != nil {
			return err
		}
		var err error
		out, err = decodeEntries(id, raws, func(h string) []byte { return getBlob(tx, h) })
		return err
	})
	return out, err
}

func (s *boltStore) count(id string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketEntries).Bucket([]byte(id)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}

func (s *boltStore) source(hash string) (src []byte, found bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketSources).Get([]byte(hash)); v != nil {
			src, found = bytes.Clone(v), true
		}
		return nil
	})
	return src, found, err
}

// claim: the file lock makes this process the journal's only user, so a
// run that exists and has not ended is always this process's to take. The
// fencing tokens live in memory: only this process writes the file, so
// they need only order its own Runs (a second Recover of a run fences off
// the first).
func (s *boltStore) claim(run, _ string, _, _ time.Time) (int64, bool, error) {
	var fence int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRuns).Get([]byte(run))
		if v == nil {
			return fmt.Errorf("%w: %q (list them with 'agentos runs')", ErrNoRun, run)
		}
		var m struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("journal: run %s: its metadata does not decode: %w", run, err)
		}
		if m.Status != StatusRunning && m.Status != StatusQuarantined {
			return endedError(run, m.Status)
		}
		s.fenceMu.Lock()
		s.fences[run]++
		fence = s.fences[run]
		s.fenceMu.Unlock()
		return nil
	})
	return fence, err == nil, err
}

// fence returns run's fencing token in this process (0: never claimed or
// begun here).
func (s *boltStore) fence(run string) (int64, error) {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	return s.fences[run], nil
}

func (s *boltStore) renew(string, []string, time.Time) ([]string, error) { return nil, nil }
func (s *boltStore) release(string, []string, time.Time) error           { return nil }

func (s *boltStore) check(name string) error {
	return s.db.View(func(tx *bolt.Tx) error {
		var errs []string
		for err := range tx.Check() {
			errs = append(errs, err.Error())
		}
		if len(errs) > 0 {
			return fmt.Errorf("journal %s is inconsistent: %s", name, strings.Join(errs, "; "))
		}
		return nil
	})
}

// liveBytes estimates what the file holds: its size less its free pages.
func (s *boltStore) liveBytes() int64 {
	fi, err := os.Stat(s.db.Path())
	if err != nil {
		return 0
	}
	st := s.db.Stats()
	return fi.Size() - int64(st.FreePageN+st.PendingPageN)*int64(s.pageSize)
}

// prune scans the whole file and deletes what decide chooses, in one
// transaction.
func (s *boltStore) prune(decide func(*pruneScan) pruneDrop) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		scan, err := scanBolt(tx)
		if err != nil {
			return err
		}
		return deleteBolt(tx, scan, decide(scan))
	})
}

// scanBolt sizes every run (its metadata and entries, with the payloads
// they refer to), payload and source of the file.
func scanBolt(tx *bolt.Tx) (*pruneScan, error) {
	entriesB := tx.Bucket(bucketEntries)
	scan := &pruneScan{blobSize: map[string]int64{}, sourceSize: map[string]int64{}}
	err := tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
		r, err := sizeBoltRun(entriesB, k, v)
		if err != nil {
			return err
		}
		scan.runs = append(scan.runs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tx.Bucket(bucketBlobs).ForEachBucket(func(k []byte) error {
		scan.blobSize[string(k)] = int64(len(k) + len(getBlob(tx, string(k))))
		return nil
	}); err != nil {
		return nil, err
	}
	if err := tx.Bucket(bucketChunks).ForEach(func(k, v []byte) error {
		scan.blobSize[string(k)] = int64(len(k) + len(v))
		return nil
	}); err != nil {
		return nil, err
	}
	err = tx.Bucket(bucketSources).ForEach(func(k, v []byte) error {
		scan.sourceSize[string(k)] = int64(len(k) + len(v))
		return nil
	})
	return scan, err
}

// sizeBoltRun sizes run id (its metadata meta, then its entries in
// entriesB) and collects the payloads its entries refer to.
func sizeBoltRun(entriesB *bolt.Bucket, id, meta []byte) (*runSize, error) {
	r := &runSize{own: int64(len(id) + len(meta))}
	if err := json.Unmarshal(meta, &r.meta); err != nil {
		return nil, err
	}
	b := entriesB.Bucket(id)
	if b == nil {
		return r, nil
	}
	seen := map[string]bool{}
	err := b.ForEach(func(ek, ev []byte) error {
		r.own += int64(len(ek) + len(ev))
		r.addRefs(seen, ev)
		return nil
	})
	return r, err
}

// deleteBolt deletes the runs (with their entries and index keys),
// payloads and sources of drop.
func deleteBolt(tx *bolt.Tx, scan *pruneScan, drop pruneDrop) error {
	runsB, entriesB, blobsB, sourcesB, flatB := tx.Bucket(bucketRuns), tx.Bucket(bucketEntries), tx.Bucket(bucketBlobs), tx.Bucket(bucketSources), tx.Bucket(bucketChunks)
	byID := make(map[string]RunMeta, len(scan.runs))
	for _, r := range scan.runs {
		byID[r.meta.ID] = r.meta
	}
	idx, tools := tx.Bucket(bucketStarted), tx.Bucket(bucketTools)
	for _, id := range drop.runs {
		if err := unindexRun(idx, tools, indexedOf(byID[id]), id); err != nil {
			return err
		}
		if err := runsB.Delete([]byte(id)); err != nil {
			return err
		}
		if err := entriesB.DeleteBucket([]byte(id)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
	}
	for _, h := range drop.blobs {
		if err := deleteBoltBlob(blobsB, flatB, h); err != nil {
			return err
		}
	}
	for _, h := range drop.sources {
		if err := sourcesB.Delete([]byte(h)); err != nil {
			return err
		}
	}
	return nil
}

// deleteBoltBlob deletes payload h: one value in the flat chunks bucket,
// or a bucket of its own.
func deleteBoltBlob(blobsB, flatB *bolt.Bucket, h string) error {
	if flatB.Get([]byte(h)) != nil {
		return flatB.Delete([]byte(h))
	}
	return blobsB.DeleteBucket([]byte(h))
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
// Compact is for the bbolt journal only: PostgreSQL reclaims the space of
// pruned runs itself (autovacuum; VACUUM FULL to give it back to the file
// system).
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
