package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxLiveTasks is how many tasks one token may have running at once
// when Options.MaxLiveTasks is 0.
const DefaultMaxLiveTasks = 16

// DefaultTaskSweep is how often expired tasks are removed when
// Options.TaskSweep is 0.
const DefaultTaskSweep = 10 * time.Minute

// taskPageSize is how many tasks one tasks/list page holds.
var taskPageSize = 50

// ErrTaskCap is the error of a task refused because its token has
// Options.MaxLiveTasks tasks running already.
var ErrTaskCap = errors.New("mcp: too many tasks running")

// taskStore keeps the tasks: in dir when set, else in memory.
//
// IMPORTANT:
//   - Every read and write of a record, and of which tasks run here (live),
//     happens under mu: a record and its liveness are read together (get),
//     and a task ends once, whoever ends it first (finish), so a
//     tasks/cancel, the run's own end and a restarted node's resolution
//     never overwrite each other.
//   - On disk a task is dir/<owner key>/<id>.json, and its id begins with
//     its creation time (16 hex digits of Unix nanoseconds): a token's
//     tasks are one directory whose listing is in creation order, so a
//     tasks/list page reads only its own entries, and expiry is decided
//     from the name without reading the file.
type taskStore struct {
	dir     string
	ttl     time.Duration
	maxLive int

	mu     sync.Mutex
	mem    map[string]*taskRecord // without dir: every task
	live   map[string]*liveTask   // the tasks running in this process
	liveBy map[string]int         // how many of them each owner has
	closed bool                   // no task starts any more
	wg     sync.WaitGroup         // the running tasks' goroutines

	reads atomic.Int64 // task files read (tests: a page reads only its own)
}

// liveTask is a task running in this process.
type liveTask struct {
	owner  string
	cancel context.CancelCauseFunc
	runID  string // the journal run its call began, once known
}

// newTaskID is a task id made at now: its time, then 64 random bits.
func newTaskID(now time.Time) string {
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], uint64(now.UnixNano()))
	_, _ = rand.Read(raw[8:])
	return hex.EncodeToString(raw[:])
}

// taskIDTime is when the task id was made.
func taskIDTime(id string) time.Time {
	b, err := hex.DecodeString(id[:16])
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)))
}

// validTaskID reports whether id is one this server made (32 hex digits):
// nothing else names a file.
func validTaskID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// ownerDir is the directory of owner's tasks: a hash, so that no owner
// name is a path.
func (ts *taskStore) ownerDir(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return filepath.Join(ts.dir, hex.EncodeToString(sum[:16]))
}

func (ts *taskStore) file(owner, id string) string {
	return filepath.Join(ts.ownerDir(owner), id+".json")
}

// expired reports whether the task id is past its time to live at now.
func (ts *taskStore) expired(id string, now time.Time) bool {
	return now.Sub(taskIDTime(id)) > ts.ttl
}

// begin records the new task t as running here with cancel. It refuses a
// task over the owner's cap and once the store is closed.
func (ts *taskStore) begin(t *taskRecord, cancel context.CancelCauseFunc) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return errors.New("the server is closing: start the task again on the restarted node")
	}
	if n := ts.liveBy[t.Owner]; n >= ts.maxLive {
		return fmt.Errorf("%w: this client's token has %d tasks running, the most a token may have at once (mcpserver.Options.MaxLiveTasks): wait for one to end (tasks/get) or cancel one (tasks/cancel), then call again", ErrTaskCap, n)
	}
	if err := ts.saveLocked(t); err != nil {
		return fmt.Errorf("the task cannot be kept: %w", err)
	}
	if ts.live == nil {
		ts.live, ts.liveBy = map[string]*liveTask{}, map[string]int{}
	}
	ts.live[t.ID] = &liveTask{owner: t.Owner, cancel: cancel}
	ts.liveBy[t.Owner]++
	ts.wg.Add(1)
	return nil
}

// done records that the task id no longer runs here.
func (ts *taskStore) done(id string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if lt := ts.live[id]; lt != nil {
		delete(ts.live, id)
		if ts.liveBy[lt.owner]--; ts.liveBy[lt.owner] <= 0 {
			delete(ts.liveBy, lt.owner)
		}
	}
	ts.wg.Done()
}

// get returns a copy of owner's task id and whether it runs here, read
// together; nil: none (or expired).
func (ts *taskStore) get(owner, id string) (*taskRecord, bool) {
	if !validTaskID(id) || ts.expired(id, time.Now()) {
		return nil, false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.loadLocked(owner, id)
	if t == nil {
		return nil, false
	}
	_, live := ts.live[id]
	return t, live
}

// finish ends owner's task id with end, unless it ended already, and
// returns the record as it is now. end MUST only set the end's fields.
func (ts *taskStore) finish(owner, id string, end func(*taskRecord)) (*taskRecord, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.loadLocked(owner, id)
	if t == nil {
		return nil, fmt.Errorf("task %s is gone (expired)", id)
	}
	if t.terminal() {
		return t, nil
	}
	end(t)
	t.Updated = time.Now()
	return t, ts.saveLocked(t)
}

// update saves a change of a running task (its message, its run id),
// unless it ended meanwhile.
func (ts *taskStore) update(owner, id string, change func(*taskRecord)) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.loadLocked(owner, id)
	if t == nil || t.terminal() {
		return nil
	}
	change(t)
	t.Updated = time.Now()
	return ts.saveLocked(t)
}

// claimRun records that the running task id's call began the journal run
// runID, unless another task running here holds that run: false.
func (ts *taskStore) claimRun(id, runID string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for other, lt := range ts.live {
		if other != id && lt.runID == runID {
			return false
		}
	}
	if lt := ts.live[id]; lt != nil {
		lt.runID = runID
	}
	return true
}

// cancel cancels the task id with cause if it runs here.
func (ts *taskStore) cancel(id string, cause error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if lt := ts.live[id]; lt != nil {
		lt.cancel(cause)
	}
}

// close refuses new tasks, cancels the running ones with cause and waits
// for them.
func (ts *taskStore) close(cause error) {
	ts.mu.Lock()
	ts.closed = true
	for _, lt := range ts.live {
		lt.cancel(cause)
	}
	ts.mu.Unlock()
	ts.wg.Wait()
}

func (ts *taskStore) saveLocked(t *taskRecord) error {
	if ts.dir == "" {
		if ts.mem == nil {
			ts.mem = map[string]*taskRecord{}
		}
		c := *t
		ts.mem[t.ID] = &c
		return nil
	}
	dir := ts.ownerDir(t.Owner)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	tmp := ts.file(t.Owner, t.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, ts.file(t.Owner, t.ID))
}

// loadLocked returns a copy of owner's task id, nil when there is none.
func (ts *taskStore) loadLocked(owner, id string) *taskRecord {
	if ts.dir == "" {
		if m := ts.mem[id]; m != nil && m.Owner == owner {
			c := *m
			return &c
		}
		return nil
	}
	ts.reads.Add(1)
	b, err := os.ReadFile(ts.file(owner, id))
	if err != nil {
		return nil
	}
	t := &taskRecord{}
	if json.Unmarshal(b, t) != nil || t.Owner != owner || t.ID != id {
		return nil
	}
	return t
}

// page returns owner's tasks made after the task cursor ("" from the
// first), oldest first, at most limit, and the cursor of the next page
// ("" when none is left). It reads only the page's files.
func (ts *taskStore) page(owner, cursor string, limit int) ([]*taskRecord, string, error) {
	if cursor != "" && !validTaskID(cursor) {
		return nil, "", fmt.Errorf("the cursor %q is not one tasks/list answered: send the nextCursor of the previous page, or none for the first", cursor)
	}
	now := time.Now()
	ids := ts.ownerIDs(owner)
	i := sort.SearchStrings(ids, cursor)
	if i < len(ids) && ids[i] == cursor {
		i++
	}
	var out []*taskRecord
	next := ""
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for ; i < len(ids); i++ {
		if ts.expired(ids[i], now) {
			continue
		}
		if len(out) == limit {
			next = out[len(out)-1].ID
			break
		}
		if t := ts.loadLocked(owner, ids[i]); t != nil {
			out = append(out, t)
		}
	}
	return out, next, nil
}

// ownerIDs are the ids of owner's tasks, sorted (so by creation).
func (ts *taskStore) ownerIDs(owner string) []string {
	var ids []string
	if ts.dir == "" {
		ts.mu.Lock()
		for id, t := range ts.mem {
			if t.Owner == owner {
				ids = append(ids, id)
			}
		}
		ts.mu.Unlock()
		sort.Strings(ids)
		return ids
	}
	ents, _ := os.ReadDir(ts.ownerDir(owner)) // sorted by name
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && validTaskID(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// sweep removes the tasks expired at now that do not run here, deciding
// from their names alone, and any task file of another layout older than
// the time to live. It returns how many it removed.
func (ts *taskStore) sweep(now time.Time) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	removed := 0
	if ts.dir == "" {
		for id := range ts.mem {
			if _, live := ts.live[id]; !live && ts.expired(id, now) {
				delete(ts.mem, id)
				removed++
			}
		}
		return removed
	}
	owners, _ := os.ReadDir(ts.dir)
	for _, o := range owners {
		path := filepath.Join(ts.dir, o.Name())
		if !o.IsDir() {
			// A task file of the first layout (dir/<id>.json) or a
			// leftover temporary file: by its age.
			if info, err := o.Info(); err == nil && now.Sub(info.ModTime()) > ts.ttl {
				if os.Remove(path) == nil {
					removed++
				}
			}
			continue
		}
		ents, _ := os.ReadDir(path)
		for _, e := range ents {
			id, _, _ := strings.Cut(e.Name(), ".")
			if _, live := ts.live[id]; live || !validTaskID(id) || !ts.expired(id, now) {
				continue
			}
			if os.Remove(filepath.Join(path, e.Name())) == nil {
				removed++
			}
		}
	}
	return removed
}
