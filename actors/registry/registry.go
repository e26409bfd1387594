package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// Tool is one registered tool, as stored in meta.json (toolmeta.Tool).
type Tool = toolmeta.Tool

// Hit is one search result (toolmeta.Hit).
type Hit = toolmeta.Hit

// Defaults of Options.
const (
	DefaultToolsDir   = regclient.DefaultToolsDir
	DefaultFile       = "meta.json"
	DefaultFlushDelay = time.Second
	// DefaultLimit is the number of hits Search returns for limit <= 0.
	DefaultLimit = toolmeta.DefaultLimit
)

// Options configure Open. The zero value means the defaults.
type Options struct {
	// ToolsDir is the directory of the tools, relative to the tool root.
	// Default "tools".
	ToolsDir string
	// File is the registry file, relative to the tool root. Default
	// "meta.json".
	File string
	// Threshold is the score at or above which the forge reuses a tool
	// instead of forging one, in (0, 1]. Default 0.85.
	Threshold float64
	// Now is the clock of Created and Updated. Default time.Now.
	Now func() time.Time
	// Logger receives warnings (a corrupt registry file, an unreadable
	// tool). Default slog.Default().
	Logger *slog.Logger
	// FlushDelay is how long usage counts (Used) may wait in memory, and
	// meta.json may lag behind the registry log, before meta.json is
	// rewritten: a burst of runs or registrations is written once. Default
	// one second; negative rewrites meta.json on every write (each costing
	// the registry's size).
	FlushDelay time.Duration
	// State is the jail of the node's state directory (the tool root's
	// .agentos), where the registry log is kept: with it, Register and
	// Remove append one record to the log instead of rewriting meta.json
	// (a write costs the same whatever the number of tools; see log.go).
	// nil: no log, every write rewrites meta.json (a cost growing with the
	// registry). IMPORTANT: it MUST NOT be a directory that is committed or
	// shared: the log is this node's.
	State *vfs.Jail
	// LogFile is the registry log's path in State. Default DefaultLogFile.
	LogFile string
	// Seed, when set, is what the writer of the tool files knows of them
	// (see Seed): Open's Rebuild reads none of the files it vouches for.
	Seed *Seed
}

// Registry is the tool registry of a tool root: every tool under the tools
// directory with its description, parameters, tags, content hash, version
// and usage, kept in memory with a search index and persisted in
// meta.json. It is safe for concurrent use; Search and Get never wait for a
// file write.
type Registry struct {
	jail       *vfs.Jail
	seed       *Seed // Open's Rebuild's (under mut), then nil
	toolsDir   string
	file       string
	threshold  float64
	now        func() time.Time
	log        *slog.Logger
	flushDelay time.Duration

	// mut serialises the structural changes (Register's upsert, Remove,
	// Rebuild), so a Rebuild's scan of the disk never overwrites a
	// Register made meanwhile.
	mut sync.Mutex

	mu    sync.RWMutex // guards the fields below
	tools map[string]*Tool
	idx   *toolmeta.Inverted
	dirty bool // memory may differ from the files
	// members are the paths of each shard's tools; dirtyShards the shards
	// whose file may differ from memory (shard.go).
	members     [Shards]map[string]struct{}
	dirtyShards map[int]bool
	closed      bool
	timer       *time.Timer // a pending usage flush
	// compactTimer rewrites meta.json once writes pause (log.go).
	compactTimer *time.Timer
	// verifyTimer checks the stat cache's too recent files once they
	// have settled (statcache.go).
	verifyTimer *time.Timer

	io sync.Mutex // serialises writes of the files and the log; guards the fields below
	// written is what each shard file holds, as far as the registry knows
	// (writtenBytes their total); legacy says the single file of earlier
	// versions is still there (removed once the shards hold its entries);
	// changedFiles are the files written or removed since Written.
	written      map[string][]byte
	writtenBytes int64
	legacy       bool
	changedFiles map[string]bool
	dir          string    // the shards' directory (shard.go)
	state        *vfs.Jail // where the log is (nil: no log)
	logFile      string    // the registry log in state (log.go)
	statFile     string    // the stat cache in state (statcache.go)
	statWritten  int64     // the stamp of the stat cache this registry last wrote (under mut)
	snapFile     string    // the snapshot in state (snapshot.go)
	snap         *snapshot // what the snapshot holds (under mut)
	logF         *os.File  // the log, open for appending (nil until the first record)
	logBytes     int64     // the log's size

	watchMu  sync.Mutex // guards watchers and next
	watchers map[int]func()
	next     int
}

// Watch calls fn after every change to the set of tools or to one tool's
// entry other than its usage count: a Register that added a tool or a new
// version, a Remove, a Rebuild that changed something. It returns a
// function that stops the calls. fn runs on the goroutine that made the
// change, when List, Get and Search answer (a Rebuild may still hold its
// writers' lock: Register and Remove wait); IMPORTANT: it MUST NOT
// block (signal a goroutine of its own, e.g. a non-blocking send on a
// buffered channel) and it is not told what changed: read List.
//
// Watch is, like Rebuild and Remove, a method of the registry's owner, not
// a message: what it reports happens on this node's registry. The registry
// actor watches its registry and publishes each change on its node's
// EventStream (regclient.Changed): the MCP server of the node, announcing
// its tools, hears them through regclient.Client.Watch.
func (r *Registry) Watch(fn func()) (stop func()) {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if r.watchers == nil {
		r.watchers = map[int]func(){}
	}
	id := r.next
	r.next++
	r.watchers[id] = fn
	return func() {
		r.watchMu.Lock()
		delete(r.watchers, id)
		r.watchMu.Unlock()
	}
}

// changed calls the Watch functions. The caller MUST NOT hold r.mu.
func (r *Registry) changed() {
	r.watchMu.Lock()
	fns := make([]func(), 0, len(r.watchers))
	for _, fn := range r.watchers {
		fns = append(fns, fn)
	}
	r.watchMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Open returns the registry of the tool root jail: it loads the registry
// file and reconciles it with the tools on disk (as Rebuild does), then
// writes the file if that changed it.
//
// IMPORTANT: a missing or corrupt file (bad JSON, wrong shape, bad entries)
// MUST NOT make Open fail: it is logged at Warn and rebuilt from the .ts
// and .js files under the tools directory. Open fails only on invalid
// Options, when the tools directory cannot be listed (ErrScan), or when
// the rebuilt file cannot be written (ErrPersist).
func Open(jail *vfs.Jail, opts Options) (*Registry, error) {
	if jail == nil {
		return nil, fmt.Errorf("%w: no jail: open the tool root with vfs.Open first", regclient.ErrOptions)
	}
	r := &Registry{
		jail:       jail,
		toolsDir:   opts.ToolsDir,
		file:       opts.File,
		threshold:  opts.Threshold,
		now:        opts.Now,
		log:        opts.Logger,
		flushDelay: opts.FlushDelay,
		tools:      map[string]*Tool{},
		idx:        toolmeta.NewInverted(),

		dirtyShards:  map[int]bool{},
		written:      map[string][]byte{},
		changedFiles: map[string]bool{},
	}
	if r.toolsDir == "" {
		r.toolsDir = DefaultToolsDir
	}
	if r.file == "" {
		r.file = DefaultFile
	}
	var err error
	if r.toolsDir, err = vfs.Clean(r.toolsDir); err != nil {
		return nil, fmt.Errorf("%w: tools directory: %w", regclient.ErrOptions, err)
	}
	if r.file, err = vfs.Clean(r.file); err != nil || r.file == "." {
		return nil, fmt.Errorf("%w: registry file %q: give a file path relative to the tool root, e.g. meta.json", regclient.ErrOptions, opts.File)
	}
	r.dir = shardDir(r.file)
	r.state = opts.State
	r.seed = opts.Seed
	r.statFile = DefaultStatFile
	r.snapFile = DefaultSnapshotFile
	if opts.LogFile == "" {
		opts.LogFile = DefaultLogFile
	}
	if r.logFile, err = vfs.Clean(opts.LogFile); err != nil || r.logFile == "." {
		return nil, fmt.Errorf("%w: registry log %q: give a file path relative to the state directory, e.g. %s", regclient.ErrOptions, opts.LogFile, DefaultLogFile)
	}
	if r.threshold == 0 {
		r.threshold = regclient.DefaultThreshold
	}
	if !(r.threshold > 0 && r.threshold <= 1) {
		return nil, fmt.Errorf("%w: threshold %v: give a score in (0, 1], e.g. 0.85", regclient.ErrOptions, opts.Threshold)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.flushDelay == 0 {
		r.flushDelay = DefaultFlushDelay
	}
	r.snap = r.loadSnapshot()
	if err := r.Rebuild(); err != nil {
		return nil, err
	}
	return r, nil
}

// Threshold returns the reuse threshold: the forge reuses a tool whose
// search score is at least this.
func (r *Registry) Threshold() float64 { return r.threshold }

// Get returns the tool registered at path.
func (r *Registry) Get(p string) (Tool, bool) {
	c, err := vfs.Clean(p)
	if err != nil {
		return Tool{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[c]
	if !ok {
		return Tool{}, false
	}
	return t.Clone(), true
}

// List returns every tool, sorted by path.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t.Clone())
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Search returns the tools best matching query, best first, at most limit
// of them (limit <= 0 means 10), never nil. A query with no searchable word
// returns no hits. It is safe to call concurrently with everything else and
// never waits for a file write.
//
// # Ranking
//
// Tools are ranked with BM25F (BM25 over weighted fields, Robertson &
// Zaragoza 2009). Fields and weights: name 3, tags 2, description 1, path
// 0.4 (the path under the tools directory, without its extension). Every
// field, and the query, is tokenised the same way: split at anything that
// is not a letter or digit and at camelCase humps (parseHTTPResponse ->
// parse http response), lowercased, English stop words and single letters
// dropped, Porter-stemmed (calculates, calculator -> calcul). For a query
// term t and a tool d, with k1 = 1.2 and b = 0.75:
//
//	tf(t,d) = Σ_f w_f · tf_f(t,d) / ((1-b) + b · len_f(d)/avglen_f)
//	idf(t)  = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//	s(t,d)  = idf(t) · tf(t,d) / (k1 + tf(t,d))
//	BM25F(q,d) = Σ_t s(t,d)   (each distinct query term once)
//
// # Score
//
// BM25F has no upper bound, so it cannot be compared with a threshold.
// Hit.Score is normalised against an ideal tool whose description holds
// every query term once and is of average length (tf = 1):
//
//	Score(q,d) = Σ_t min(s(t,d), s(t,ideal)) / Σ_t s(t,ideal)
//
// capped at 1 and rounded to 4 decimals. Read it as the idf-weighted share
// of the query the tool covers: a term in the tool's name, tags or
// description counts fully; a term only in its path, or lost in a much
// longer than average description, in part; a missing term not at all.
// Capping each term keeps a strong match on one term from making up for a
// missing one, and makes the score independent of the registry's size
// except through the idf weights. A query naming a tool's name and purpose
// scores 1 or close ("compound interest calculator" for "Calculates
// compound interest over years."); an unrelated query 0; a query whose
// words no tool has lowers every score, since nothing covers them. So
// Threshold (0.85) means "the tool covers at least 85% of what was asked".
//
// Hits are ordered by Score, then BM25F, then usage, then path.
func (r *Registry) Search(query string, limit int) []Hit {
	if limit <= 0 {
		limit = DefaultLimit
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.idx.Hits(query, limit, func(path string) Tool { return r.tools[path].Clone() })
}

// Register registers the tool at path (relative to the tool root) with
// source src, and writes the registry file: a new path gets Version 1; a
// known path whose hash changed gets Version+1 and Updated = now, keeping
// Created and Usage; the same hash changes nothing and writes nothing.
//
// It returns the entry after the call. Errors wrap ErrNotTool (a path that
// is not a tool), a vfs path error, ErrClosed, or ErrPersist: then the
// tool IS registered in memory and is written by the next write.
func (r *Registry) Register(p string, src []byte) (Tool, error) {
	c, err := r.toolPath(p)
	if err != nil {
		return Tool{}, err
	}
	h := transpile.Hash(src)
	r.mu.RLock()
	cur, ok := r.tools[c]
	closed := r.closed
	var same Tool
	if ok && cur.Hash == h {
		same = cur.Clone()
	}
	r.mu.RUnlock()
	if closed {
		return Tool{}, fmt.Errorf("%w: cannot register %s", regclient.ErrClosed, c)
	}
	if same.Path != "" {
		return same, nil
	}
	m := toolmeta.Extract(src) // outside the locks: parsing is the slow part

	r.mut.Lock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.mut.Unlock()
		return Tool{}, fmt.Errorf("%w: cannot register %s", regclient.ErrClosed, c)
	}
	now := r.stamp()
	t := &Tool{Path: c, Name: toolName(c), Hash: h, Version: 1, Created: now, Updated: now}
	setMeta(t, m)
	if cur, ok := r.tools[c]; ok {
		if cur.Hash == h { // registered meanwhile
			out := cur.Clone()
			r.mu.Unlock()
			r.mut.Unlock()
			return out, nil
		}
		t.Version, t.Created, t.Usage = cur.Version+1, cur.Created, cur.Usage
	}
	r.setTool(c, t)
	r.idx.Put(t, r.toolsDir)
	out := t.Clone()
	r.mu.Unlock()
	defer r.mut.Unlock() // records reach the log in the order of the changes
	defer r.changed()
	return out, r.write(record{Put: t})
}

// write appends rec to the log (O(1) in the number of tools), then
// rewrites meta.json when the log has outgrown it, or schedules that
// rewrite for FlushDelay from now. A failed append leaves the change in
// memory (dirty), written by the next rewrite.
func (r *Registry) write(rec record) error {
	if r.state == nil {
		return r.persist(false)
	}
	r.io.Lock()
	err := r.appendRecord(rec)
	compact := err == nil && (r.logOutgrown() || r.flushDelay < 0)
	r.io.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", regclient.ErrPersist, r.logFile, err)
	}
	if compact {
		return r.persist(false)
	}
	r.mu.Lock()
	r.scheduleCompaction()
	r.mu.Unlock()
	return nil
}

// Remove drops the tool at path and writes the registry file. Errors wrap
// ErrNotRegistered, ErrClosed or ErrPersist (the tool is removed from
// memory all the same).
func (r *Registry) Remove(p string) error {
	c, err := vfs.Clean(p)
	if err != nil {
		return err
	}
	r.mut.Lock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.mut.Unlock()
		return fmt.Errorf("%w: cannot remove %s", regclient.ErrClosed, c)
	}
	old, ok := r.tools[c]
	if !ok {
		r.mu.Unlock()
		r.mut.Unlock()
		return fmt.Errorf("%w: %s: list the tools to see which are registered", regclient.ErrNotRegistered, c)
	}
	r.dropTool(c)
	r.idx.Remove(c)
	r.mu.Unlock()
	defer r.mut.Unlock()
	defer r.changed()
	return r.write(record{Del: c, Hash: old.Hash})
}

// Used counts one use of the tool at path; unknown paths are ignored. The
// count is written within FlushDelay, and MUST be on disk after Flush or
// Close return.
func (r *Registry) Used(p string) {
	c, err := vfs.Clean(p)
	if err != nil {
		return
	}
	r.mu.Lock()
	t, ok := r.tools[c]
	if !ok || r.closed {
		r.mu.Unlock()
		return
	}
	// Copy on write: clones handed out earlier share nothing mutable, but
	// a persist snapshot may be reading *t.
	nt := *t
	nt.Usage++
	r.setTool(c, &nt)
	r.idx.Used(c)
	now := r.flushDelay < 0
	if !now && r.timer == nil {
		r.timer = time.AfterFunc(r.flushDelay, r.flushLater)
	}
	r.mu.Unlock()
	if now {
		if err := r.persist(false); err != nil {
			r.log.Warn("registry: usage count not written", slog.String("file", r.file), slog.Any("err", err))
		}
	}
}

// flushLater is the usage timer's function.
func (r *Registry) flushLater() {
	r.mu.Lock()
	r.timer = nil
	r.mu.Unlock()
	if err := r.persist(false); err != nil {
		r.log.Warn("registry: usage counts not written; retrying at the next write", slog.String("file", r.file), slog.Any("err", err))
	}
}

// Flush writes what is not on disk yet (usage counts, a change whose write
// failed). Errors wrap ErrPersist.
func (r *Registry) Flush() error { return r.persist(false) }

// Close flushes and stops the usage timer. After Close the registry still
// answers Get, List and Search, ignores Used, and refuses changes with
// ErrClosed. Close does not close the jail. It is idempotent.
func (r *Registry) Close() error {
	r.mut.Lock()
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if r.compactTimer != nil {
		r.compactTimer.Stop()
	}
	if r.verifyTimer != nil {
		r.verifyTimer.Stop()
	}
	r.mu.Unlock()
	r.mut.Unlock()
	err := r.persist(false)
	r.io.Lock()
	r.closeLog()
	r.io.Unlock()
	r.mut.Lock()
	r.saveSnapshot() // for the next start (snapshot.go)
	r.mut.Unlock()
	return err
}

// Rebuild re-scans the tools on disk, e.g. after a Git merge: it re-reads
// the registry file (which the merge may have changed) and reconciles it
// and the registry in memory with the tool files. A tool whose hash is
// unchanged keeps its entry (Created, Usage, Version; the larger usage and
// version when the file and memory disagree); a changed tool is extracted
// again and its Version bumped; a new one is added with Version 1; a
// vanished one is dropped. The file is written only if that changed it.
//
// Errors wrap ErrScan (the tools directory cannot be listed), ErrClosed or
// ErrPersist. A corrupt registry file is not an error: it is logged at Warn
// and replaced.
func (r *Registry) Rebuild() error {
	r.mut.Lock()
	defer r.mut.Unlock()
	r.mu.RLock()
	closed := r.closed
	mem := make(map[string]*Tool, len(r.tools))
	for p, t := range r.tools {
		mem[p] = t
	}
	r.mu.RUnlock()
	if closed {
		return fmt.Errorf("%w: cannot rebuild", regclient.ErrClosed)
	}

	st := r.load()
	disk := st.entries
	files, listed := r.listing() // the Git scan's, when it can stand for a walk
	if !listed {
		var err error
		if files, err = r.scanEntries(); err != nil {
			return err
		}
	}
	cache := r.loadStatCache()
	sc := r.scanTools(files, mem, disk, cache)
	r.seed.release() // the first Rebuild's only: the files move on
	r.seed = nil
	r.saveStatCache(cache, sc.stats, sc.read)
	next, diskUsage := sc.next, sc.diskUsage

	// A first Rebuild starts from the snapshot's search index, if any.
	var indexed map[string]*Tool
	var x *toolmeta.Inverted
	if len(mem) == 0 {
		x, indexed = r.takeIndex()
	}
	changed := false
	r.mu.Lock()
	if x != nil && r.idx.Len() == 0 {
		r.idx = x
	}
	for p, t := range next {
		cur := r.tools[p]
		if f := st.files[p]; f == nil || !same(f, t) || st.legacy {
			r.dirtyShards[shardOf(p)] = true // the shard's file differs from memory
		}
		// Usage only grows: take the larger of memory (counting uses made
		// during the scan) and the file (counting another node's uses).
		usage := diskUsage[p]
		if cur != nil {
			usage = max(usage, cur.Usage)
		}
		if t.Usage != usage {
			nt := *t
			nt.Usage = usage
			t = &nt
		}
		if cur == t {
			continue
		}
		r.member(p)
		if cur == nil || cur.Hash != t.Hash || cur.Version != t.Version || !sameSearch(cur, t) {
			changed = true
		}
		if cur == nil || !sameSearch(cur, t) {
			r.index(t, indexed)
		} else {
			r.idx.SetUsage(p, t.Usage)
		}
		r.tools[p] = t
		r.dirty = true
	}
	for p := range r.tools {
		if _, ok := next[p]; !ok {
			r.dropTool(p)
			r.idx.Remove(p)
			changed = true
		}
	}
	for p := range st.files {
		if _, ok := next[p]; !ok {
			r.dirtyShards[shardOf(p)] = true // a vanished tool's entry is dropped from its file
		}
	}
	r.dropIndexed(indexed)
	r.mu.Unlock()
	if changed {
		// Readers are free; a Register waits on mut until the Rebuild ends.
		defer r.changed()
	}

	r.io.Lock()
	r.written, r.legacy = st.raw, st.legacy // compare with what the files hold now
	r.writtenBytes = 0
	for _, b := range st.raw {
		r.writtenBytes += int64(len(b))
	}
	r.io.Unlock()
	return r.persist(true)
}

// index puts t in the search index, unless the snapshot's index, which
// holds the tools indexed (what index has not met yet), has it with the
// same searched fields. The caller holds r.mu.
func (r *Registry) index(t *Tool, indexed map[string]*Tool) {
	if f, ok := indexed[t.Path]; ok {
		delete(indexed, t.Path)
		if sameSearch(f, t) {
			r.idx.SetUsage(t.Path, t.Usage)
			return
		}
		r.idx.Remove(t.Path)
	}
	r.idx.Put(t, r.toolsDir)
}

// dropIndexed removes from the search index the snapshot's tools that are
// no longer registered (what index did not meet), and indexes every tool
// again if the index still differs from the tools (a snapshot that does
// not hold what it says). The caller holds r.mu.
func (r *Registry) dropIndexed(indexed map[string]*Tool) {
	if indexed == nil { // no snapshot's index: Put and Remove kept it
		return
	}
	for p := range indexed {
		r.idx.Remove(p)
	}
	if r.idx.Len() == len(r.tools) {
		return
	}
	r.log.Warn("registry: the snapshot's search index does not match the tools; indexing every tool again", slog.String("file", r.snapFile), slog.Int("indexed", r.idx.Len()), slog.Int("tools", len(r.tools)))
	r.idx = toolmeta.NewInverted()
	for _, t := range r.tools {
		r.idx.Put(t, r.toolsDir)
	}
}

// scanned is what Rebuild's scan of the tool files found.
type scanned struct {
	next      map[string]*Tool // each file's entry, reconciled
	diskUsage map[string]int   // each entry's usage as the registry's files hold it
	stats     map[string]fileStat
	read      bool // a file was read: the stat cache changed
}

// scanTools reconciles each tool file with its entry in memory (mem) and
// in the registry's files (disk). A file unchanged since the last Rebuild
// (the stat cache) whose entry has its hash is not read again.
func (r *Registry) scanTools(files []vfs.Entry, mem, disk map[string]*Tool, cache statCache) scanned {
	now := r.stamp()
	sc := scanned{next: make(map[string]*Tool, len(files)), diskUsage: make(map[string]int, len(files)), stats: make(map[string]fileStat, len(files))}
	for _, e := range files {
		p, m, d := e.Path, mem[e.Path], disk[e.Path]
		h, ok := cache.hash(p, e.Info)
		if !ok {
			h, ok = r.seed.hash(p, e.Info)
		}
		var src []byte
		if !ok || !hasHash(h, m, d) {
			if readHook != nil {
				readHook(p)
			}
			var err error
			if src, err = r.jail.ReadFile(p); err != nil {
				r.log.Warn("registry: cannot read a tool; keeping its entry as it was", slog.String("path", p), slog.Any("err", err))
				if m != nil {
					sc.next[p] = m
				}
				continue
			}
			h, sc.read = transpile.Hash(src), true
		}
		if e.Info != nil {
			fst := statOf(e.Info)
			fst.hash = h
			sc.stats[p] = fst
		}
		sc.next[p] = reconcile(p, h, src, m, d, now)
		if d != nil {
			sc.diskUsage[p] = d.Usage
		}
	}
	return sc
}

// hasHash reports whether the entry in memory or on file has hash h (then
// reconcile needs no source).
func hasHash(h string, m, d *Tool) bool {
	return m != nil && m.Hash == h || d != nil && d.Hash == h
}

// reconcile decides the entry of the tool at p, whose source src hashes to
// h, from its entry in memory (m) and in the registry file (d), either of
// which may be nil or stale. Usage is settled by the caller.
func reconcile(p, h string, src []byte, m, d *Tool, now time.Time) *Tool {
	var base *Tool
	version := 0
	for _, e := range []*Tool{m, d} {
		if e != nil && e.Hash == h {
			if base == nil {
				base = e
			}
			version = max(version, e.Version)
		}
	}
	created := time.Time{}
	for _, e := range []*Tool{m, d} {
		if e != nil && !e.Created.IsZero() && (created.IsZero() || e.Created.Before(created)) {
			created = e.Created
		}
	}
	if base != nil {
		// Memory's own entry, or the file's when memory has none: that one
		// was decoded for this Rebuild alone, so nothing else holds it (a
		// boot keeps every entry so, 10,000 copies fewer at 10,000 tools).
		if base.Version == version && base.Created.Equal(created) && (base == m || m == nil && !created.IsZero()) {
			return base
		}
		t := base.Clone()
		t.Version, t.Created = version, created
		if t.Created.IsZero() {
			t.Created = now
		}
		return &t
	}
	// New or changed: extract again.
	t := &Tool{Path: p, Name: toolName(p), Hash: h, Version: 1, Created: created, Updated: now}
	for _, e := range []*Tool{m, d} {
		if e != nil {
			t.Version = max(t.Version, e.Version+1)
			t.Usage = max(t.Usage, e.Usage)
		}
	}
	if t.Created.IsZero() {
		t.Created = now
	}
	setMeta(t, toolmeta.Extract(src))
	return t
}

// loaded is what load read.
type loaded struct {
	raw     map[string][]byte // each shard file's content
	legacy  bool              // the single file of earlier versions exists
	files   map[string]*Tool  // the valid entries of the files
	entries map[string]*Tool  // files, with the log's records applied
}

// load reads the registry's files (the single file of earlier versions,
// then the shards, whose entries win) and applies the log. It never
// fails: a corrupt file or entry is logged at Warn and skipped.
func (r *Registry) load() loaded {
	st := loaded{raw: map[string][]byte{}, files: map[string]*Tool{}}
	raw, err := r.jail.ReadFile(r.file)
	switch {
	case err == nil:
		st.legacy = true
		r.parseFile(r.file, raw, st.files)
	case errors.Is(err, vfs.ErrNotFound):
	default:
		r.log.Warn("registry: cannot read the registry file; rebuilding it from the tools", slog.String("file", r.file), slog.Any("err", err))
	}
	legacy := st.files
	st.files = map[string]*Tool{}
	names, err := r.jail.List(r.dir)
	if err != nil && !errors.Is(err, vfs.ErrNotFound) {
		r.log.Warn("registry: cannot list the registry's shards; rebuilding them from the tools", slog.String("dir", r.dir), slog.Any("err", err))
	}
	seen := map[string]snapShard{}
	for _, f := range names {
		if path.Dir(f) != r.dir || !strings.HasSuffix(f, ".json") {
			continue
		}
		b, err := r.jail.ReadFile(f)
		if err != nil {
			r.log.Warn("registry: cannot read a shard; its tools are registered again from their files", slog.String("file", f), slog.Any("err", err))
			continue
		}
		st.raw[f] = b
		r.decodeShard(f, b, st.files, seen)
	}
	r.snap.shards = seen // the shards of no file are dropped
	for p, t := range legacy {
		if s := st.files[p]; s == nil || s.Version < t.Version {
			st.files[p] = t
		}
	}
	st.entries = make(map[string]*Tool, len(st.files))
	for p, t := range st.files {
		st.entries[p] = t
	}
	st.entries = r.replayLog(st.entries)
	return st
}

// parseFile adds the valid entries of the registry file f (content raw)
// to out. A corrupt file or entry is logged at Warn and skipped.
//
// The file is decoded in one pass (a later boot decodes every shard);
// only when that fails is it decoded again entry by entry, so that a
// corrupt entry costs itself alone.
func (r *Registry) parseFile(f string, raw []byte, out map[string]*Tool) {
	var whole struct {
		Tools map[string]*Tool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &whole); err == nil && whole.Tools != nil {
		for p, t := range whole.Tools {
			if t == nil {
				t = &Tool{} // null: no hash, refused as the entry-wise decode refuses it
			}
			r.addEntry(f, p, t, nil, out)
		}
		return
	}
	var doc struct {
		Tools map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Tools == nil {
		if err == nil {
			err = errors.New(`no "tools" object`)
		}
		r.log.Warn("registry: the registry file is corrupt; rebuilding it from the tools", slog.String("file", f), slog.Any("err", err))
		return
	}
	for p, e := range doc.Tools {
		t := &Tool{}
		r.addEntry(f, p, t, json.Unmarshal(e, t), out)
	}
}

// addEntry adds the entry t of path p, read from the registry file f
// (decodeErr: its decoding failed), to out, or logs why it is skipped.
func (r *Registry) addEntry(f, p string, t *Tool, decodeErr error, out map[string]*Tool) {
	err := decodeErr
	if err == nil {
		var c string
		if c, err = r.toolPath(p); err == nil && c != p {
			err = fmt.Errorf("path %q is not clean (%q)", p, c)
		}
	}
	if err == nil && t.Hash == "" {
		err = errors.New("no hash")
	}
	if err != nil {
		r.log.Warn("registry: skipping a corrupt entry of the registry file; it is registered again from its file", slog.String("file", f), slog.String("path", p), slog.Any("err", err))
		return
	}
	t.Path, t.Name = p, toolName(p)
	t.Version = max(t.Version, 1)
	t.Usage = max(t.Usage, 0)
	if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
		t.Parameters = nil
	}
	if len(t.Tags) == 0 {
		t.Tags = nil
	}
	out[p] = t
}

// scanEntries lists the tool files under the tools directory, with what
// the listing read of each.
func (r *Registry) scanEntries() ([]vfs.Entry, error) {
	all, err := r.jail.Entries(r.toolsDir)
	if errors.Is(err, vfs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", regclient.ErrScan, r.toolsDir, err)
	}
	out := all[:0]
	for _, e := range all {
		if r.isTool(e.Path) {
			out = append(out, e)
		}
	}
	return out, nil
}

// toolPath cleans p and checks that it names a tool.
func (r *Registry) toolPath(p string) (string, error) {
	c, err := vfs.Clean(p)
	if err != nil {
		return "", err
	}
	if !r.isTool(c) {
		return "", fmt.Errorf("%w: %s: a tool is a .ts or .js file under %s/ (not a test, declaration or vendor file)", regclient.ErrNotTool, p, r.toolsDir)
	}
	return c, nil
}

// isTool reports whether the clean path c is a tool file.
func (r *Registry) isTool(c string) bool {
	rel := c
	if r.toolsDir != "." {
		var ok bool
		if rel, ok = strings.CutPrefix(c, r.toolsDir+"/"); !ok {
			return false
		}
	}
	if rel == "" || strings.HasPrefix(rel, "vendor/") {
		return false
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") || part == "node_modules" {
			return false
		}
	}
	base := path.Base(rel)
	switch {
	case strings.HasSuffix(base, ".d.ts"),
		strings.HasSuffix(base, ".test.ts"), strings.HasSuffix(base, ".test.js"),
		strings.HasSuffix(base, ".spec.ts"), strings.HasSuffix(base, ".spec.js"):
		return false
	}
	ext := path.Ext(base)
	return (ext == ".ts" || ext == ".js") && len(base) > len(ext)
}

// persist writes the shards that may differ from memory (or, with
// force, checks them even when nothing is marked dirty), then removes the
// single file of earlier versions once the shards hold its entries, then
// empties the log. A write costs the shards it touches, not the registry.
func (r *Registry) persist(force bool) error {
	r.io.Lock()
	defer r.io.Unlock()
	r.mu.Lock()
	if !r.dirty && !force {
		r.mu.Unlock()
		return nil
	}
	r.dirty = false
	dirty := r.dirtyShards
	r.dirtyShards = map[int]bool{}
	if r.legacy { // migration: every shard holding a tool is written
		for i, m := range r.members {
			if len(m) > 0 {
				dirty[i] = true
			}
		}
	}
	// Entries are copied on write, never changed in place: the snapshot is
	// maps of pointers, marshalled outside the lock.
	snap := make(map[int]map[string]*Tool, len(dirty))
	for i := range dirty {
		m := make(map[string]*Tool, len(r.members[i]))
		for p := range r.members[i] {
			m[p] = r.tools[p]
		}
		snap[i] = m
	}
	r.mu.Unlock()

	fail := func(f string, err error) error {
		r.mu.Lock()
		r.dirty = true
		for i := range dirty {
			r.dirtyShards[i] = true
		}
		r.mu.Unlock()
		return fmt.Errorf("%w: %s: %w", regclient.ErrPersist, f, err)
	}
	for i, m := range snap {
		f := shardPath(r.dir, i)
		if err := r.writeShard(f, m); err != nil {
			return fail(f, err)
		}
	}
	if r.legacy {
		if err := r.jail.Remove(r.file); err != nil && !errors.Is(err, vfs.ErrNotFound) {
			return fail(r.file, err)
		}
		r.legacy = false
		r.changedFiles[r.file] = true
	}
	// The shards hold every record now (renamed into place first: a kill
	// before the log is emptied replays records already in them, harmlessly).
	if err := r.resetLog(); err != nil {
		return fail(r.logFile, err)
	}
	return nil
}

// writeShard writes the shard file f with the entries m (removes it when
// m is empty), unless it holds that already. The caller holds r.io.
func (r *Registry) writeShard(f string, m map[string]*Tool) error {
	old, had := r.written[f]
	if len(m) == 0 {
		if !had {
			return nil
		}
		if err := r.jail.Remove(f); err != nil && !errors.Is(err, vfs.ErrNotFound) {
			return err
		}
		r.writtenBytes -= int64(len(old))
		delete(r.written, f)
		r.changedFiles[f] = true
		return nil
	}
	data, err := marshalFile(m)
	if err != nil || (had && bytes.Equal(data, old)) {
		return err
	}
	if err := r.jail.WriteFile(f, data); err != nil {
		return err
	}
	r.writtenBytes += int64(len(data) - len(old))
	r.written[f] = data
	r.changedFiles[f] = true
	return nil
}

// marshalFile renders a registry file: {"tools": {path: Tool}}, keys sorted,
// indented by two spaces, with a final newline.
func marshalFile(tools map[string]*Tool) ([]byte, error) {
	b, err := json.MarshalIndent(struct {
		Tools map[string]*Tool `json:"tools"`
	}{tools}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// stamp returns now as stored: UTC, without monotonic reading.
func (r *Registry) stamp() time.Time { return r.now().UTC().Round(0) }

// toolName is the file's base name without its extension.
func toolName(p string) string {
	b := path.Base(p)
	return strings.TrimSuffix(b, path.Ext(b))
}

// setMeta sets what t's source says of it.
func setMeta(t *Tool, m toolmeta.Meta) {
	t.Description, t.Tags, t.Parameters = m.Description, m.Tags, m.Parameters
}

// sameSearch reports whether t and o index the same (name, tags,
// description, path).
func sameSearch(t, o *Tool) bool {
	return t.Path == o.Path && t.Name == o.Name && t.Description == o.Description && slices.Equal(t.Tags, o.Tags)
}

// same reports whether t and o are the same entry (every stored field).
func same(t, o *Tool) bool {
	return sameSearch(t, o) && t.Hash == o.Hash && t.Version == o.Version && t.Usage == o.Usage &&
		t.Created.Equal(o.Created) && t.Updated.Equal(o.Updated) && bytes.Equal(t.Parameters, o.Parameters)
}
