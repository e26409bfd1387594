package journal

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// Listing runs a page at a time. A journal of 100,000 runs is listed as
// fast as one of ten: the storage keeps an index of the runs by start
// (bbolt: the bucket "started", key = start time (8 bytes, big-endian,
// sign bit flipped so that times sort) + run id, value = the run's call
// count (8 bytes, big-endian) once a write ended it, or one byte 0 while
// it is unknown; PostgreSQL: an index on (started, id) and the column
// calls). A listing walks that index from its cursor, newest first, and
// reads only the runs it shows.
//
// Journals written before the index (storage format 2) are indexed once
// when opened (a migration: one pass over the runs' metadata); their runs'
// counts are not migrated but counted when a listing shows them, so the
// migration reads no entries.

// RunQuery selects the runs EachRun lists, and their order.
type RunQuery struct {
	// Oldest lists the runs oldest first; otherwise newest first.
	Oldest bool
	// Before (newest first only) lists the runs that started before this
	// run (its id or a unique prefix; with the same start, a smaller id):
	// the next older page starts before the last run of a page.
	Before string
	// After (oldest first only) lists the runs that started after this run
	// (with the same start, a larger id).
	After string
	// Limit is the most runs listed; 0 lists every run.
	Limit int
}

// cursor returns the run q starts after (in its order), if any.
func (q RunQuery) cursor() (string, error) {
	switch {
	case q.Limit < 0:
		return "", fmt.Errorf("journal: a run listing's limit must be 0 (every run) or more, not %d", q.Limit)
	case q.Before != "" && q.After != "":
		return "", fmt.Errorf("journal: a run listing takes Before or After, not both")
	case q.Before != "" && q.Oldest:
		return "", fmt.Errorf("journal: Before pages newest first; list oldest first with After")
	case q.After != "" && !q.Oldest:
		return "", fmt.Errorf("journal: After pages oldest first; list newest first with Before")
	}
	return q.Before + q.After, nil
}

// runCursor is where a listing resumes: past the run with this start and
// id (older, newest first; newer, oldest first). The zero cursor starts at
// the newest run (the oldest, oldest first).
type runCursor struct {
	started time.Time
	id      string
}

// listChunk is how many runs one read transaction lists: a listing holds
// at most this many runs in memory, and a writer never waits on a long
// listing (bbolt grows its file only when no read is open).
const listChunk = 256

// EachRun calls fn with every run q selects, in q's order (by start, then
// id), with RunMeta.Calls filled in. It reads listChunk
// runs per read transaction: memory does not grow with the journal, and
// writes go on between chunks. A run written while the listing runs may or
// may not be listed; no run is listed twice. fn returning an error stops
// the listing with that error. A Before that names no run is ErrNoRun.
func (j *Journal) EachRun(q RunQuery, fn func(RunMeta) error) error {
	from, err := q.cursor()
	if err != nil {
		return err
	}
	return j.eachPage(from, q.Limit, func(st store, at runCursor, n int) ([]RunMeta, error) {
		return st.runsPage(at, n, q.Oldest)
	}, fn)
}

// eachPage calls fn with the runs page reads, from the run from ("" from
// the start) and at most limit of them (0: every run), listChunk runs per
// read transaction. page returns up to n runs past at, in the listing's
// order.
func (j *Journal) eachPage(from string, limit int, page func(st store, at runCursor, n int) ([]RunMeta, error), fn func(RunMeta) error) error {
	var at runCursor
	if from != "" {
		m, err := j.Get(from)
		if err != nil {
			return err
		}
		at = runCursor{started: m.Started, id: m.ID}
	} else {
		j.barrier() // the runs queued before the listing are listed
	}
	left := limit
	for {
		n := listChunk
		if limit > 0 {
			n = min(n, left)
		}
		var got []RunMeta
		if err := j.readNow(func(st store) (err error) {
			got, err = page(st, at, n)
			return err
		}); err != nil {
			return err
		}
		for _, m := range got {
			if err := fn(m); err != nil {
				return err
			}
		}
		left -= len(got)
		if len(got) < n || (limit > 0 && left == 0) {
			return nil
		}
		last := got[len(got)-1]
		at = runCursor{started: last.Started, id: last.ID}
	}
}

// startedKey is a run's key in the bbolt index "started".
func startedKey(started time.Time, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(started.UnixNano())^1<<63)
	return append(k, id...)
}

// countValue is an index value: the run's call count, or unknown.
func countValue(n int, known bool) []byte {
	if !known {
		return []byte{0}
	}
	return binary.BigEndian.AppendUint64(nil, uint64(n))
}

// storedCount reads an index value: the count, and whether it is known.
func storedCount(v []byte) (int, bool) {
	if len(v) != 8 {
		return 0, false
	}
	return int(binary.BigEndian.Uint64(v)), true
}

// startedOf reads the start of a stored RunMeta (its other fields are
// skipped, not kept).
func startedOf(meta []byte) (time.Time, error) {
	var m struct {
		Started time.Time `json:"started"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		return time.Time{}, err
	}
	return m.Started, nil
}
