package journal

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
)

// Durability says when an entry is on disk; see the package documentation.
type Durability int

// The durability modes.
const (
	GroupCommit Durability = iota // the default
	SyncEach
	NoSync
	// WriteEach commits each entry, and a run's start and end, before its
	// result is handed on, like SyncEach, but never fsyncs: every record
	// is in the operating system's hands (write(2)) before it is used, so
	// a process crash (kill -9) loses nothing anyone saw; a power loss or
	// kernel crash may lose what the OS had not written back yet and, as
	// bbolt orders its page writes with fsync, may damage the embedded
	// file (as NoSync may). It is the shape of a journal appended to a
	// file without fsync.
	WriteEach
)

func (d Durability) String() string {
	return [...]string{"group-commit", "sync-each", "no-sync", "write-each"}[d]
}

// EachCommitted says whether every entry and every run's start and end
// are committed before they return (SyncEach, WriteEach).
func (d Durability) EachCommitted() bool { return d == SyncEach || d == WriteEach }

// fsyncs says whether the journal's commits are fsynced (not NoSync or
// WriteEach).
func (d Durability) fsyncs() bool { return d != NoSync && d != WriteEach }

// Options configure a journal. The zero value is GroupCommit with defaults.
type Options struct {
	Durability Durability
	// ReadOnly opens the embedded journal for reading only (Runs, EachRun,
	// Get, Entries ...), beside other readers: bbolt then skips rebuilding
	// its free-page list, a pass over the whole file that an open for
	// writing makes (seconds at 100,000 runs). IMPORTANT: every write
	// (Begin, PutSource, Import, Prune ...) fails with ErrReadOnly. A
	// journal of an older storage format is opened for writing once, to
	// migrate it (see page.go). PostgreSQL ignores it.
	ReadOnly bool
	// MaxBatch bounds the entries one group commit writes. Default 4096.
	MaxBatch int
	// SyncRuns, under GroupCommit and NoSync, commits a run's start
	// (Begin), its tool source (PutSource) and its end (End) before they
	// return, as SyncEach does, while its calls stay group-committed: a
	// crash then loses at most calls, never a run whose caller saw its
	// result. It costs two commits per run (four fsyncs on the embedded
	// file under GroupCommit). See the package documentation.
	SyncRuns bool
	// Redact lists extra request/response field names (case-insensitive)
	// whose values never reach the file, besides DefaultRedactedFields.
	Redact []string
	// Secrets are literal secret values (API keys, tokens, passwords)
	// scrubbed by value from everything the journal writes, as AddSecret
	// does.
	Secrets []string
	// Seal, when set, reports whether the answer to c is itself a secret
	// (the content of a file under a configured secret path): the journal
	// then keeps only its SHA-256 (Entry.Sealed), never its bytes, and
	// scrubs its content from the rest of the run. IMPORTANT: Seal MUST
	// select only calls that are safe to make again (reads without side
	// effects): replay makes them again to get the answer back, and fails
	// with [AGENTOS-J004] when the answer is gone or changed.
	Seal func(c driver.Call) bool
	// Now is the clock of run start and end times; nil means time.Now.
	Now func() time.Time
	// Owner names this Journal in run claims on a shared (PostgreSQL)
	// journal: Begin and Recover claim runs for it. Empty: host/pid/random,
	// unique per Journal. IMPORTANT: two live Journals MUST NOT share an
	// Owner.
	Owner string
	// Lease is how long a claim lasts unless renewed (0: DefaultLease). A
	// live Journal renews its claims every third of it; a node that dies
	// leaves its runs resumable by another node once it lapses.
	Lease time.Duration
	// BlobThreshold is the size in bytes above which a request or response
	// is stored once by content hash instead of inside its entry (0:
	// DefaultBlobThreshold; negative: never).
	BlobThreshold int
	// ChunkDrivers are the drivers whose requests and responses are
	// stored as content-addressed chunks (each message of a model request
	// kept once, however many later requests repeat it; see chunks.go and
	// docs/REPLAY.md). nil: DefaultChunkDrivers (the model's, "llm").
	ChunkDrivers []string
	// NoChunks stores every payload whole, as journals did before chunks
	// (for comparison: a conversation's journal then grows with the square
	// of its turns).
	NoChunks bool
}

// Run status values.
const (
	StatusRunning = "running" // started, not ended: a crash left it, or it is in flight
	StatusOK      = "ok"
	StatusFailed  = "failed"
	// StatusQuarantined: the run's host died while the run was executing
	// in-process; it is resumed only on request, in process isolation (see
	// RunMeta.Quarantine).
	StatusQuarantined = "quarantined"
)

// RunMeta describes one run: one top-level operation (an exec_tool call;
// later a forge or a conversation).
type RunMeta struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`           // "exec"
	Tool string `json:"tool,omitempty"` // tool path
	Hash string `json:"hash,omitempty"` // the tool's content hash
	// Pinned says the run records every module it required (Modules): its
	// replay and recovery load each from the journal, by hash. False for a
	// run recorded before agentos pinned modules (it replays its requires
	// from the tool tree, as it always did). See modules.go.
	Pinned bool `json:"pinned,omitempty"`
	// Modules are the modules the run required from the tool tree (relative,
	// /lib/... and vendor requires; not the entry, which is Hash), each by
	// the path it resolved to and its content hash, in the order first
	// required. Their sources are kept by PutSource (AddModule).
	Modules []Module `json:"modules,omitempty"`
	// Commit is the Git commit the tool tree was at when the run began, where
	// known ("" without Git). IMPORTANT: informative only: the tree may have
	// held uncommitted changes; the content hashes say what ran.
	Commit string `json:"commit,omitempty"`
	// AtVersion says the caller asked for this exact version of the tool
	// (tools/x.ts@<hash>) rather than the tree's current file.
	AtVersion bool            `json:"at_version,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	Started   time.Time       `json:"started"`
	Ended     time.Time       `json:"ended,omitzero"`
	Status    string          `json:"status"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
	Reason    string          `json:"reason,omitempty"` // why a run was marked failed by recovery
	// ArgsRedacted says the arguments held credentials the journal does
	// not keep: replay and recovery see [REDACTED] in their place.
	ArgsRedacted bool `json:"args_redacted,omitempty"`
	// ReplayOf names the run this one replayed or recovered, if any.
	ReplayOf string `json:"replay_of,omitempty"`
	// Caller is the process the run was made for, with the rights it held
	// then; nil for a run no process made (agentos exec, the operator's).
	// IMPORTANT: recovery MUST resume a run with a Caller under those
	// rights, as the original run was.
	Caller *Caller `json:"caller,omitempty"`
	// Limits are the limits the run executed under (see limits.go); nil
	// for a run recorded before agentos kept them, or not a tool run.
	Limits *Limits `json:"limits,omitempty"`
	// Calls is how many driver calls the run recorded, as EachRun lists
	// it. IMPORTANT: it is kept by the storage beside the metadata (like
	// Host's claim), not in it: the storage counts a run's entries when a
	// write ends it (any status but running), so that a listing reads the
	// count instead of counting every run's entries; a running run, or one
	// ended before agentos kept counts, is counted when listed. Runs, Get
	// and Export leave it 0.
	Calls int `json:"calls,omitempty"`
	// Logs are the lines the run logged (a tool's console.* and tgp.log,
	// as the executor collected them), scrubbed of the run's secrets and
	// bounded to MaxRunLogBytes: LogsCut counts the lines left out or
	// shortened past that bound (see runlogs.go). nil for a run that
	// logged nothing or was recorded before agentos kept logs.
	// IMPORTANT: informative only: replay MUST NOT compare them.
	Logs    []string `json:"logs,omitempty"`
	LogsCut int      `json:"logs_cut,omitempty"`
	// TraceID is the OpenTelemetry trace id (32 hex digits) of the span
	// the run began under: "" when no tracer recorded it (tracing off) or
	// for a run recorded before agentos kept it. A recovered run keeps the
	// trace it began in. IMPORTANT: informative only, like Logs.
	TraceID string `json:"trace_id,omitempty"`
	// Host is the process that last ran (or resumed) the run; see host.go.
	Host
}

// Caller is who a run was made for: a kernel process's name (or pid) and
// the grants of its capability token when the run began.
type Caller struct {
	Process string             `json:"process"`
	Grants  []capability.Grant `json:"grants"`
}

// Duration is how long the run took (0 while it runs).
func (m RunMeta) Duration() time.Duration {
	if m.Ended.IsZero() {
		return 0
	}
	return m.Ended.Sub(m.Started)
}

// Entry is one recorded driver call.
type Entry struct {
	Seq      uint64          `json:"seq"`
	Driver   string          `json:"driver"`
	Op       string          `json:"op"`
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    *driver.Error   `json:"error,omitempty"`
	At       time.Time       `json:"at"`
	Duration time.Duration   `json:"duration_ns"`
	Cost     float64         `json:"cost,omitempty"`
	// Sealed is "sha256:<hex>" of an answer the journal does not keep (see
	// Options.Seal); Response is then "[REDACTED]".
	Sealed string `json:"sealed,omitempty"`
}

// call renders the entry's request the way divergence errors show it.
func (e *Entry) call() string { return fmt.Sprintf("%s.%s %s", e.Driver, e.Op, e.Request) }

// Journal is an open journal: a bbolt file (Open) or a PostgreSQL database
// several nodes share (OpenPostgres). It is safe for concurrent use.
type Journal struct {
	st     store
	opts   Options
	redact *redactor
	now    func() time.Time

	writes chan *write
	lost   sync.Map // run id -> error of a write that failed after its caller moved on
	wg     sync.WaitGroup
	mu     sync.RWMutex // guards closed against sends on writes
	closed bool

	sources sync.Map // hashes PutSource kept since Open: Prune leaves them (their run may be starting)
	stored  sync.Map // hashes whose source is stored, or queued by this Journal: PutSource skips them (unless lost)

	owner string        // this Journal's name in run claims (Options.Owner)
	held  sync.Map      // run id -> struct{}: runs this Journal claimed and has not ended
	stop  chan struct{} // closed by Close: stops the lease renewer

	// inflight counts the writes submitted and not yet applied: a read
	// waits for them (barrier) only when there are some.
	inflight atomic.Int64
	// refused holds, with the reason, the runs whose creation failed (their
	// id was taken, or the write failed): their later writes are dropped,
	// never added to the run that owns the id nor left in the file without
	// a start. hasRefused spares the writer the lookup.
	refused    sync.Map
	hasRefused atomic.Bool

	idMu   sync.Mutex
	idMS   string              // the millisecond of the ids in idUsed
	idUsed map[string]struct{} // the ids this Journal issued in that millisecond
	// idPast is the latest millisecond this Journal issued ids in before
	// idMS; idFloor (read once, idFloorRead) is at or above the millisecond
	// of every id the storage held or was given (Begin with meta.ID) that
	// uniqueID did not issue. An id whose millisecond is above both cannot
	// be taken: see uniqueID.
	idPast      string
	idFloor     string
	idFloorRead bool
}

// write is one unit for the writer goroutine.
type write struct {
	source []byte // a tool source to keep under run (its hash), or nil
	run    string
	entry  []byte // encoded Entry, or nil
	blobs  []blob // payloads entry refers to
	seq    uint64
	meta   []byte // encoded RunMeta, or nil
	reset  bool   // delete the run's entries first (Import)
	create bool   // meta is a new run's: fail with errRunExists if the id is taken
	// started is meta's start (the run index's key); ended says meta's
	// status is not running: the storage then keeps the run's call count.
	started time.Time
	ended   bool
	sync    bool // commit durably whatever the mode (Run.Durable)
	flush   bool // no data: done once every write queued before it is applied
	// claim, with meta, makes the writing Journal the run's holder until
	// until (a shared journal; the embedded one ignores it).
	claim bool
	until time.Time
	// fence, when not 0, is the fencing token the writing Run holds on
	// run: the store refuses the write (ErrFenced) if the run's token is
	// another one now.
	fence int64
	done  chan error
	// argsClean says meta's Args are redacted already (a Run's, redacted
	// at Begin): putMetaWith does not redact them again.
	argsClean bool
	// index is what the indexes keep of meta (toolindex.go), so that the
	// storage need not decode it.
	index indexed
}

// newJournal starts a Journal on st.
func newJournal(st store, opts Options) *Journal {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 4096
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	j := &Journal{st: st, opts: opts, redact: newRedactor(opts.Redact), now: opts.Now, writes: make(chan *write, opts.MaxBatch), owner: opts.Owner, stop: make(chan struct{})}
	if j.owner == "" {
		j.owner = defaultOwner()
	}
	for _, v := range opts.Secrets {
		j.AddSecret(v)
	}
	if j.now == nil {
		j.now = time.Now
	}
	j.wg.Go(j.writer)
	if st.shared() {
		j.wg.Go(j.renewer)
	}
	return j
}

// usable reports why run's calls cannot be journaled now, if they cannot.
func (j *Journal) usable(run string) error {
	j.mu.RLock()
	closed := j.closed
	j.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return j.lostWrites(run)
}

// lostWrites returns the error of a write of run that failed after its
// caller had moved on (group commit), if one did.
func (j *Journal) lostWrites(run string) error {
	if v, ok := j.lost.Load(run); ok {
		return fmt.Errorf("journal: some calls of run %s could not be written: %w", run, v.(error))
	}
	return nil
}

// read runs fn on the storage, or reports ErrClosed. It sees every write
// submitted before it (see barrier).
func (j *Journal) read(fn func(store) error) error {
	j.barrier()
	return j.readNow(fn)
}

// readNow is read without the barrier: it sees what is committed, and
// MUST only be used where a write still queued cannot change the answer.
func (j *Journal) readNow(fn func(store) error) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ErrClosed
	}
	return fn(j.st)
}

// Durability returns the journal's durability mode (Options.Durability).
func (j *Journal) Durability() Durability { return j.opts.Durability }

// Path returns where the journal is: the bbolt file's path, or for
// PostgreSQL the database's URL without its password
// ("postgres://user@host:5432/db").
func (j *Journal) Path() string { return j.st.path() }

// Shared reports whether several processes may use the journal at once (a
// PostgreSQL journal): runs are then claimed (Claim) before they are
// resumed.
func (j *Journal) Shared() bool { return j.st.shared() }

// Close commits what is queued and closes the file. Runs still open stay
// "running": recovery resumes them later.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	close(j.writes)
	close(j.stop)
	j.mu.Unlock()
	j.wg.Wait()
	// The runs still held are not run here any more: their claims lapse
	// now, so that another node may resume them at once.
	rerr := j.st.release(j.owner, j.heldRuns(), j.now())
	return errors.Join(rerr, j.st.close())
}

// submit hands w to the writer; with wait it returns once w is committed.
func (j *Journal) submit(w *write, wait bool) error {
	done, err := j.enqueue(w, wait)
	if err != nil || done == nil {
		return err
	}
	return <-done
}

// enqueue hands w to the writer; with wait it returns the channel that
// answers once w is committed.
func (j *Journal) enqueue(w *write, wait bool) (<-chan error, error) {
	if j.opts.ReadOnly {
		return nil, fmt.Errorf("journal %s: %w", j.st.path(), ErrReadOnly)
	}
	if wait {
		w.done = make(chan error, 1)
	}
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		return nil, ErrClosed
	}
	j.inflight.Add(1)
	j.writes <- w
	j.mu.RUnlock()
	return w.done, nil
}

// writer commits queued writes in batches, one transaction per batch.
// groupLinger is how long a group commit nobody waits for stays open for
// more writes. IMPORTANT: it adds at most this much to what a crash can
// lose under GroupCommit and NoSync ("the last milliseconds", docs/REPLAY.md);
// a write someone waits for (SyncEach, SyncRuns, a durable run, a flush)
// closes the batch at once.
const groupLinger = time.Millisecond

func (j *Journal) writer() {
	queued := make([]*write, 0, j.opts.MaxBatch)
	batch := make([]*write, 0, j.opts.MaxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for w := range j.writes {
		queued = append(queued[:0], w)
		waited, open := w.done != nil, true
	fill:
		for len(queued) < j.opts.MaxBatch {
			select {
			case w, ok := <-j.writes:
				if !ok {
					open = false
					break fill
				}
				queued = append(queued, w)
				waited = waited || w.done != nil
			default:
				break fill
			}
		}
		// A batch nobody waits for stays open groupLinger for more
		// writes: calls that come one at a time (a tool's loop of reads)
		// then share a transaction, instead of one each.
		if !waited && open && len(queued) < j.opts.MaxBatch {
			linger.Reset(groupLinger)
		wait:
			for len(queued) < j.opts.MaxBatch {
				select {
				case w, ok := <-j.writes:
					if !ok {
						break wait
					}
					queued = append(queued, w)
					if w.done != nil {
						break wait // someone waits: commit now
					}
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		j.commit(queued, batch[:0])
		j.inflight.Add(-int64(len(queued)))
	}
}

// commit applies the data writes of queued in one transaction and answers
// everyone waiting, flushes included.
func (j *Journal) commit(queued, batch []*write) {
	for _, w := range queued {
		switch {
		case w.flush:
		case j.hasRefused.Load() && j.isRefused(w) != nil:
			err := j.isRefused(w)
			if w.done != nil {
				w.done <- err
			} else {
				j.lost.LoadOrStore(w.run, err)
			}
		default:
			batch = append(batch, w)
		}
	}
	defer func() {
		for _, w := range queued {
			if w.flush {
				w.done <- nil
			}
		}
	}()
	if len(batch) == 0 {
		return
	}
	now := j.now()
	err := j.st.apply(batch, j.owner, now)
	if err == nil {
		for _, w := range batch {
			if w.done != nil {
				w.done <- nil
			}
		}
		return
	}
	// One bad write must not take the others down with it: retry each
	// alone, and remember a failure nobody waits for against its run.
	for _, w := range batch {
		if werr := j.isRefused(w); j.hasRefused.Load() && werr != nil {
			if w.done != nil {
				w.done <- werr
			} else {
				j.lost.LoadOrStore(w.run, werr)
			}
			continue
		}
		werr := j.st.apply([]*write{w}, j.owner, now)
		if werr != nil && w.create {
			// IMPORTANT: a run whose start was not written MUST NOT have
			// its calls and end written: they would land in the run that
			// holds the id, or stand in the file without a start.
			j.refused.Store(w.run, fmt.Errorf("journal: run %s was not created (%w), so its writes are dropped", w.run, werr))
			j.hasRefused.Store(true)
		}
		if w.done != nil {
			w.done <- werr
		} else if werr != nil {
			j.lost.LoadOrStore(w.run, werr)
		}
	}
}

// isRefused returns why w's run was not created, or nil when it was (or
// may yet be).
func (j *Journal) isRefused(w *write) error {
	if why, ok := j.refused.Load(w.run); ok {
		return why.(error)
	}
	return nil
}

// barrier returns once every write submitted before it is applied (and
// so visible to reads): a caller reads what it wrote even when the write
// was queued without waiting (GroupCommit's Begin and End).
func (j *Journal) barrier() {
	if j.inflight.Load() == 0 {
		return
	}
	_ = j.submit(&write{flush: true}, true)
}

// async reports whether a run's Begin and End are queued for the next
// group commit instead of committed before they return: under GroupCommit
// and NoSync on the embedded file, unless Options.SyncRuns. (SyncEach, a
// Durable run's End and a shared journal, whose claims need the commit,
// wait.)
func (j *Journal) async() bool {
	return !j.opts.Durability.EachCommitted() && !j.opts.SyncRuns && !j.st.shared()
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// newID returns a run id that sorts by start time: 20261122-205012.345-a1b2c3.
func (j *Journal) newID() string {
	var r [3]byte
	readRandom(r[:])
	return j.now().UTC().Format(idMillis) + "-" + hex.EncodeToString(r[:])
}

// uniqueID returns a new run id that this Journal has not issued and the
// storage does not hold: a Begin queued without waiting cannot learn of a
// collision in time, so it is ruled out before.
//
// The storage is asked only when the id's millisecond could hold an id
// this Journal did not issue: the storage's latest id at the first call
// (an embedded file is this process's alone) and every id given to Begin
// since raise a floor, and ids issued in an earlier millisecond are in
// idPast. Above both, only the ids of idUsed can be taken (a clock that
// went back takes the slow path). Asking cost a read transaction, about
// 30 µs of every exec's path.
func (j *Journal) uniqueID() string {
	j.idMu.Lock()
	defer j.idMu.Unlock()
	j.readIDFloor()
	for {
		id := j.newID()
		ms := id[:len(idMillis)]
		if ms != j.idMS {
			j.idPast = max(j.idPast, j.idMS)
			j.idMS, j.idUsed = ms, map[string]struct{}{}
		}
		if _, issued := j.idUsed[id]; issued {
			continue
		}
		if ms > j.idPast && ms > j.idFloor {
			j.idUsed[id] = struct{}{}
			return id
		}
		// The lookup sees only what is committed: an id issued in this
		// millisecond before the clock went back may still be queued.
		j.barrier()
		found := false
		j.readNow(func(st store) error {
			found, _ = st.exists(id)
			return nil
		})
		if !found {
			j.idUsed[id] = struct{}{}
			return id
		}
	}
}

// readRandom fills a new run id's random part (tests draw collisions).
var readRandom = func(b []byte) { rand.Read(b) }

// idMillis is the layout of a run id's millisecond, its first part.
const idMillis = "20060102-150405.000"

// readIDFloor sets idFloor to the millisecond part of the storage's
// greatest run id, once (a storage that cannot say, or fails to, gets a
// floor no id passes). The caller MUST hold idMu.
func (j *Journal) readIDFloor() {
	if j.idFloorRead {
		return
	}
	j.idFloorRead = true
	ls, ok := j.st.(interface{ lastRunID() (string, error) })
	if !ok {
		j.idFloor = "\xff"
		return
	}
	var last string
	err := j.readNow(func(store) error {
		var err error
		last, err = ls.lastRunID()
		return err
	})
	if err != nil {
		j.idFloor = "\xff"
		return
	}
	j.idFloor = max(j.idFloor, last[:min(len(last), len(idMillis))])
}

// raiseIDFloor raises idFloor to the millisecond of id, an id given to
// Begin or imported (see uniqueID), if it has a generated id's length:
// another can never equal one.
func (j *Journal) raiseIDFloor(id string) {
	if len(id) != len(idMillis)+len("-a1b2c3") {
		return
	}
	j.idMu.Lock()
	defer j.idMu.Unlock()
	j.idFloor = max(j.idFloor, id[:min(len(id), len(idMillis))])
}

// Begin records the start of a run and returns the handle that records its
// calls. meta.ID, Started and Status are filled in.
//
// IMPORTANT: when the start is on disk depends on the mode. Under SyncEach,
// with Options.SyncRuns, on a shared journal, and for a run given its own
// meta.ID, it is committed
// before Begin returns. Under GroupCommit and NoSync on the embedded file
// it is queued for the next group commit, ahead of the run's calls and end
// (one queue, committed in order, each batch atomically): a crash may lose
// a run's start only together with everything the run recorded after it
// (see the package documentation).
//
// On a shared journal the run is claimed by this Journal (see Claim) in the
// same commit, and its claim is renewed until End, Interrupt or Close.
func (j *Journal) Begin(meta RunMeta) (*Run, error) {
	generated := meta.ID == ""
	if generated && j.async() {
		meta.ID = j.uniqueID()
		j.stamp(&meta)
		scope := j.redactArgs(&meta)
		if err := j.putMetaWith(meta, &write{create: true, claim: true, argsClean: true}, false); err != nil {
			return nil, err
		}
		j.held.Store(meta.ID, int64(1))
		return &Run{j: j, meta: meta, scope: scope, fence: 1, argsClean: true}, nil
	}
	if generated {
		meta.ID = j.newID()
	} else if j.raiseIDFloor(meta.ID); j.exists(meta.ID) {
		return nil, fmt.Errorf("journal: a run with id %q exists already: run ids are unique (leave RunMeta.ID empty to get a fresh one)", meta.ID)
	}
	j.stamp(&meta)
	scope := j.redactArgs(&meta)
	for attempt := 0; ; attempt++ {
		if generated && attempt > 0 {
			meta.ID = j.newID()
		}
		err := j.putMetaWith(meta, &write{create: true, claim: true, argsClean: true}, true)
		if err == nil {
			break
		}
		// Another node took the same id in the same millisecond (one
		// chance in 16 million): draw again.
		if !errors.Is(err, errRunExists) || !generated || attempt == 8 {
			return nil, err
		}
	}
	j.held.Store(meta.ID, int64(1))
	return &Run{j: j, meta: meta, scope: scope, fence: 1, argsClean: true}, nil
}

// stamp fills in a beginning run's start, status and host.
func (j *Journal) stamp(meta *RunMeta) {
	meta.Started = j.now()
	meta.Status = StatusRunning
	meta.Host.stamp()
}

// redactArgs redacts a beginning run's arguments and returns the run's
// secret scope, holding what they carried.
func (j *Journal) redactArgs(meta *RunMeta) *secretSet {
	scope := &secretSet{}
	var redacted bool
	meta.Args, redacted = j.redact.args(meta.Args, scope)
	meta.ArgsRedacted = meta.ArgsRedacted || redacted
	return scope
}

// exists reports whether a run has exactly this id (Get also matches prefixes).
func (j *Journal) exists(id string) bool {
	found := false
	j.read(func(st store) error {
		found, _ = st.exists(id)
		return nil
	})
	return found
}

func (j *Journal) putMeta(meta RunMeta) error { return j.putMetaWith(meta, &write{}, true) }

// putMetaWith writes meta with w's flags (create, claim); with wait it
// returns once the write is committed. IMPORTANT: a write that adds a run
// under an id uniqueID did not issue MUST raise the floor first
// (raiseIDFloor), or uniqueID may issue the same id without asking.
func (j *Journal) putMetaWith(meta RunMeta, w *write, wait bool) error {
	meta.Owner, meta.LeaseUntil, meta.Calls = "", time.Time{}, 0 // kept by the storage, beside the metadata
	if !w.argsClean {
		var redacted bool
		meta.Args, redacted = j.redact.args(meta.Args, nil)
		meta.ArgsRedacted = meta.ArgsRedacted || redacted
	}
	meta.Result = j.redact.json(meta.Result)
	meta.Error = j.redact.json(meta.Error)
	meta.Reason = j.redact.text(meta.Reason)
	b, err := meta.appendJSON(make([]byte, 0, 512))
	if err != nil {
		return fmt.Errorf("journal: the metadata of run %s: %w", meta.ID, err)
	}
	w.run, w.meta, w.started, w.ended = meta.ID, b, meta.Started, meta.Status != StatusRunning
	w.index = indexedOf(meta)
	if w.claim {
		w.until = j.now().Add(j.opts.Lease)
	}
	return j.submit(w, wait)
}

// PutSource keeps a tool's source under its content hash (once), so that a
// run can be replayed against the exact code it ran even after the file
// changed. Like Begin, under GroupCommit and NoSync on the embedded file it
// is queued, ahead of the runs begun after it, instead of committed before
// it returns; a failure to write it then fails the End of every run of
// this Journal that ran it.
func (j *Journal) PutSource(hash string, src []byte) error {
	if hash == "" {
		return fmt.Errorf("journal: PutSource needs the source's content hash")
	}
	j.sources.Store(hash, true)
	if _, ok := j.stored.Load(hash); ok {
		if _, lost := j.lost.Load(hash); !lost {
			return nil
		}
	}
	var err error
	if j.async() {
		// Queued without asking the store first: the writer keeps a source
		// only if its hash is absent (both stores), so a source an earlier
		// process kept costs the writer one lookup, and this run no read of
		// the store (a transaction; with PostgreSQL a round trip).
		j.lost.Delete(hash) // this write may succeed where an earlier one failed
		err = j.submit(&write{run: hash, source: src}, false)
	} else {
		found := false
		j.readNow(func(st store) error {
			_, found, _ = st.source(hash)
			return nil
		})
		if found { // no commit to wait for
			j.stored.Store(hash, true)
			return nil
		}
		err = j.submit(&write{run: hash, source: src}, true)
	}
	if err == nil {
		j.stored.Store(hash, true)
	}
	return err
}

// Source returns the tool source kept under hash.
func (j *Journal) Source(hash string) ([]byte, error) {
	var src []byte
	err := j.read(func(st store) error {
		v, found, err := st.source(hash)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("the journal keeps no source with hash %s", hash)
		}
		src = v
		return nil
	})
	return src, err
}

// Run is a run being recorded.
type Run struct {
	j       *Journal
	mu      sync.Mutex  // guards meta against AddModule, End, Interrupt, Rehost
	ended   bool        // End or Interrupt wrote the run's last metadata: AddModule no longer does
	dirty   atomic.Bool // AddModule added a module not yet written: written before the run's next recorded call
	meta    RunMeta
	durable bool
	// paid, when set (DurableFor), says which of the run's calls are
	// durable; the others are held in held (under heldMu) until the run's
	// next durable call or metadata write, and queued just ahead of it.
	paid   func(driver.Call) bool
	heldMu sync.Mutex
	held   []*write
	// scope holds the secrets found in this run (credential arguments and
	// headers, secret files' content): scrubbed from its later entries and
	// its result too.
	scope *secretSet
	// fence is the fencing token this Run was given when its run was
	// begun (1) or claimed (Recover): every write of the run carries it.
	fence int64
	// chunks remembers the run's chunked payloads, for the next (chunks.go).
	chunks chunker
	// superseded is the store's refusal of one of this Run's writes
	// because the run was claimed again (ErrClaimed, ErrFenced): the Run
	// performs no call after it.
	superseded atomic.Pointer[error]
	// argsClean: meta's Args were redacted by Begin (with this Journal's
	// rules) and are written as they are. A recovered run's, read from a
	// store another node may share, are redacted again.
	argsClean bool
}

// Fence returns the fencing token the run's writes carry: 1 for a run
// begun here, the token of the claim for a recovered one. A larger token
// in the store means another claim superseded this Run.
func (r *Run) Fence() int64 { return r.fence }

// putMeta writes the run's metadata as r knows it, with w's flags and the
// run's fencing token.
func (r *Run) putMeta(w *write, wait bool) error {
	w.fence, w.argsClean = r.fence, r.argsClean
	r.heldMu.Lock()
	defer r.heldMu.Unlock()
	if err := r.releaseHeld(); err != nil {
		return err
	}
	return r.j.putMetaWith(r.meta, w, wait)
}

// releaseHeld queues the calls DurableFor held, in their order, ahead of
// whatever the caller queues next. The caller holds heldMu.
func (r *Run) releaseHeld() error {
	for i, w := range r.held {
		if _, err := r.j.enqueue(w, false); err != nil {
			r.held = r.held[i:]
			return err
		}
	}
	r.held = r.held[:0]
	return nil
}

// Durable makes every call of the run committed and fsynced before its
// result is handed on, whatever the journal's mode: for calls that are
// paid for (a model's answer), so that a crash can never make a resumed
// run pay for one again. Call it before Middleware.
func (r *Run) Durable() *Run {
	r.durable = true
	return r
}

// DurableFor makes the calls paid holds durable (as Durable: committed
// and fsynced before their result is handed on) and holds the run's other
// calls in memory until its next durable call or its end, to be committed
// with it: a run that pays for few calls (a forge's model answers among
// its path checks and test runs) then costs one commit per paid call and
// one for its end, instead of one per call. The end is committed before
// End returns, as a Durable run's. Under SyncEach and WriteEach nothing is
// held: every call is committed before its result is used.
//
// IMPORTANT: a crash loses the calls held since the last durable one, so
// a resumed run performs them again: paid MUST hold every call that cannot
// be performed twice, or whose second answer could differ in a way the
// run cannot take. Call it before Middleware.
func (r *Run) DurableFor(paid func(driver.Call) bool) *Run {
	r.paid = paid
	return r
}

// waitsMeta says whether the run's metadata writes (its end, its modules)
// are committed before they return: always but under GroupCommit and
// NoSync on the embedded file, and there for a Durable run and one with
// DurableFor.
func (r *Run) waitsMeta() bool { return !r.j.async() || r.durable || r.paid != nil }

// durableCall says whether the call c of the run is durable, and whether
// it is held (DurableFor).
func (r *Run) durableCall(c driver.Call) (durable, hold bool) {
	switch {
	case r.durable:
		return true, false
	case r.paid == nil:
		return false, false
	case r.paid(c):
		return true, false
	default:
		return false, !r.j.opts.Durability.EachCommitted()
	}
}

// Committed returns once the run's start, and everything queued before
// the call, is committed to the journal (under GroupCommit: on disk), or
// with the error that kept the run from being written. Where Begin already
// committed the start (SyncEach, Options.SyncRuns, a shared journal) it
// only reports that error.
//
// IMPORTANT: an executor that runs a tool inside its own process MUST call
// it before the tool starts: if the tool then kills its host, the run is
// in the journal, to be quarantined rather than lost whole.
func (r *Run) Committed() error {
	r.heldMu.Lock()
	err := r.releaseHeld()
	r.heldMu.Unlock()
	if err != nil {
		return err
	}
	if r.j.async() {
		if err := r.j.submit(&write{flush: true}, true); err != nil {
			return err
		}
	}
	return r.j.usable(r.meta.ID)
}

// ID returns the run's id.
func (r *Run) ID() string { return r.meta.ID }

// Middleware records every call of the run: the call goes to the wrapped
// Host, then its request and response are journaled before the response is
// returned (and, under SyncEach, fsynced first).
func (r *Run) Middleware() driver.Middleware {
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			if err := r.j.usable(r.meta.ID); err != nil {
				// IMPORTANT: no I/O happens that the journal cannot record.
				return nil, driver.Errorf(driver.CodeUnavailable, "%s: not performed: %v", c, err)
			}
			if err := r.superseded.Load(); err != nil {
				return nil, driver.Errorf(driver.CodeUnavailable, "%s: not performed: %v", c, *err)
			}
			start := r.j.now()
			sealed := r.j.opts.Seal != nil && r.j.opts.Seal(c)
			val, err := next.Do(ctx, c)
			if err != nil && ctx.Err() != nil {
				// Interrupted (shutdown, a killed process), not answered:
				// nothing is recorded, so a resumed run performs it again
				// instead of replaying an interruption it never saw.
				return val, err
			}
			// IMPORTANT: the modules the run required so far are queued
			// ahead of this call's entry: a recorded call never comes
			// without the modules that made it.
			if rerr := r.flushModules(); rerr != nil {
				return nil, driver.Errorf(driver.CodeUnavailable, "%s: the journal could not record the run's modules, so its result is withheld: %v", c, rerr)
			}
			if rerr := r.record(c, val, err, start, sealed); rerr != nil {
				if errors.Is(rerr, ErrClaimed) {
					r.superseded.Store(&rerr) // another claim took the run: perform nothing more
				}
				return nil, driver.Errorf(driver.CodeUnavailable, "%s: the journal could not record the call, so its result is withheld: %v", c, rerr)
			}
			return val, err
		})
	}
}

// record journals one call: its request redacted (what it holds under
// credential names or in URLs joins the run's scope first, so that an
// answer echoing it is scrubbed too), its answer redacted or, sealed, only
// hashed.
func (r *Run) record(c driver.Call, val json.RawMessage, callErr error, start time.Time, sealed bool) error {
	j, scope, ck := r.j, r.scope, &r.chunks
	if sealed && callErr == nil {
		scope.addContent(val)
	}
	e := Entry{Seq: c.Seq, Driver: c.Driver, Op: c.Op, Request: j.redact.jsonIn(c.Request, scope), At: start, Duration: j.now().Sub(start)}
	switch {
	case callErr != nil:
		e.Error = driver.AsError(callErr)
		e.Error = &driver.Error{Code: e.Error.Code, Message: j.redact.textIn(e.Error.Message, scope)}
	case sealed:
		e.Response, e.Sealed = json.RawMessage(`"`+Redacted+`"`), sealOf(val)
	default:
		e.Response = j.redact.jsonIn(val, scope)
	}
	durable, hold := r.durableCall(c)
	wait := durable || j.opts.Durability.EachCommitted()
	// Encoded and queued (or held) under the chunker's lock: an entry that
	// continues another's chunks is queued after it, so committed with or
	// after it.
	ck.mu.Lock()
	entry, blobs := j.encodeEntry(&e, ck)
	w := &write{run: r.meta.ID, seq: c.Seq, entry: entry, blobs: blobs, sync: durable, fence: r.fence}
	done, err := r.queue(w, wait, hold)
	ck.mu.Unlock()
	if err != nil || done == nil {
		return err
	}
	return <-done
}

// queue hands the run's entry w to the writer behind the calls held so
// far, or holds it too (hold).
func (r *Run) queue(w *write, wait, hold bool) (<-chan error, error) {
	r.heldMu.Lock()
	defer r.heldMu.Unlock()
	if hold {
		r.held = append(r.held, w)
		return nil, nil
	}
	if err := r.releaseHeld(); err != nil {
		return nil, err
	}
	return r.j.enqueue(w, wait)
}

// End records how the run ended. It returns an error if any of the run's
// calls could not be journaled (as far as known when End is called).
//
// IMPORTANT: under SyncEach, with Options.SyncRuns, on a shared journal,
// and for a Durable or DurableFor run, the end is committed before End
// returns. Under GroupCommit and NoSync on the embedded file it is queued
// for the next group commit (concurrent runs share one commit), after the
// run's calls, and End returns at once: a crash may then lose the end (the
// run is resumed by recovery) or the whole run (see the package
// documentation). Every read of this Journal (Get, Runs, Entries, ...)
// sees it.
func (r *Run) End(status string, result, errJSON json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	r.dirty.Store(false) // the modules are written with the end
	if err := r.j.lostWrites(r.meta.ID); err != nil {
		r.meta.Reason = err.Error()
		status = StatusFailed
	} else if v, ok := r.j.lost.Load(r.meta.Hash); ok && r.meta.Hash != "" {
		r.meta.Reason = fmt.Sprintf("journal: the source of run %s (hash %s) could not be written: %v", r.meta.ID, r.meta.Hash, v.(error))
		status = StatusFailed
	} else {
		for _, m := range r.meta.Modules {
			if v, ok := r.j.lost.Load(m.Hash); ok {
				r.meta.Reason = fmt.Sprintf("journal: the source of module %s of run %s (hash %s) could not be written: %v", m.Path, r.meta.ID, m.Hash, v.(error))
				status = StatusFailed
				break
			}
		}
	}
	r.meta.Ended = r.j.now()
	r.meta.Status = status
	r.meta.Result = r.j.redact.jsonIn(result, r.scope)
	r.meta.Error = r.j.redact.jsonIn(errJSON, r.scope)
	r.meta.Reason = r.j.redact.textIn(r.meta.Reason, r.scope)
	if err := r.putMeta(&write{}, r.waitsMeta()); err != nil {
		// IMPORTANT: the end is not written: the run stays "running", to
		// be resumed (its recorded calls replayed, none performed again).
		// This Journal stops renewing its claim, so that the run becomes
		// resumable once the lease lapses (at once if the release below
		// reaches the store), instead of being held here for good.
		_ = r.j.letGo(r.meta.ID)
		return fmt.Errorf("journal: the end of run %s (%s) was not written, so the run stays resumable: %w", r.meta.ID, status, err)
	}
	if err := r.j.lostWrites(r.meta.ID); err != nil {
		// A write failed while End was being written: the run is not ok.
		if r.meta.Status != StatusFailed {
			r.meta.Status, r.meta.Reason = StatusFailed, err.Error()
			_ = r.putMeta(&write{}, true)
		}
		_ = r.j.letGo(r.meta.ID)
		return err
	}
	// The end is committed: a claim that fails to go now lapses by itself.
	_ = r.j.letGo(r.meta.ID)
	return nil
}

// Meta returns the run's metadata as last written.
func (r *Run) Meta() RunMeta {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.meta
	m.Modules = slices.Clone(m.Modules)
	return m
}

// Runs returns every run's metadata, oldest first.
func (j *Journal) Runs() ([]RunMeta, error) {
	var out []RunMeta
	err := j.read(func(st store) (err error) {
		out, err = st.runs()
		return err
	})
	sort.SliceStable(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	return out, err
}

// Get returns the run whose id is id or starts with it (a unique prefix).
func (j *Journal) Get(id string) (RunMeta, error) {
	var found []RunMeta
	err := j.read(func(st store) (err error) {
		found, err = st.prefixed(id)
		for _, m := range found {
			if m.ID == id {
				found = []RunMeta{m}
				break
			}
		}
		return err
	})
	switch {
	case err != nil:
		return RunMeta{}, err
	case len(found) == 0 || id == "":
		return RunMeta{}, fmt.Errorf("%w: %q (list them with 'agentos runs')", ErrNoRun, id)
	case len(found) > 1:
		return RunMeta{}, fmt.Errorf("%w: %q matches %s and %d more; give more of the id", ErrAmbiguous, id, found[0].ID, len(found)-1)
	}
	return found[0], nil
}

// Entries returns a run's recorded calls in sequence order.
func (j *Journal) Entries(id string) ([]Entry, error) {
	var out []Entry
	err := j.read(func(st store) (err error) {
		out, err = st.entries(id)
		return err
	})
	return out, err
}

// Count returns how many calls run id recorded.
func (j *Journal) Count(id string) (int, error) {
	n := 0
	err := j.read(func(st store) (err error) {
		n, err = st.count(id)
		return err
	})
	return n, err
}

// Unfinished returns the runs that started and never ended. On a shared
// journal it leaves out the runs another live node holds (HeldElsewhere):
// only those this node may resume, or runs itself, are listed.
func (j *Journal) Unfinished() ([]RunMeta, error) {
	runs, err := j.Runs()
	var out []RunMeta
	for _, r := range runs {
		if r.Status == StatusRunning && !j.HeldElsewhere(r) {
			out = append(out, r)
		}
	}
	return out, err
}

// MarkFailed ends a run that cannot be resumed, saying why: a run is never
// silently dropped.
func (j *Journal) MarkFailed(id, reason string) error {
	m, err := j.Get(id)
	if err != nil {
		return err
	}
	m.Status, m.Reason, m.Ended = StatusFailed, reason, j.now()
	return j.putMeta(m)
}

// Check checks the journal's consistency: bbolt's check of the whole file;
// on PostgreSQL, that every run's metadata and entries decode and every
// payload an entry refers to is kept.
func (j *Journal) Check() error {
	return j.read(func(st store) error { return st.check(j.Path()) })
}
