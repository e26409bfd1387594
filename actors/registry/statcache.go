package registry

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// The stat cache: what Rebuild learnt of each tool file, so that a later
// Rebuild (a later boot) reads only the files that changed since. It is the
// state file DefaultStatFile (no state directory: no cache), one line per
// tool file:
//
//	<size> <mtime ns> <inode> <ctime ns> <content hash> <path>
//
// after a header "agentos-registry-stat 1 <ns>" giving when it was written.
// A file whose size, modification and change times and inode are those of
// its line has the line's hash, and is not read, unless it was modified
// within statRacy of the cache being written (a write in the same tick of
// the file system's clock would not change its times: such a file is read
// again, as Git does with its index). Such files are checked once they
// have settled (verifyRacy, statRacy after the cache was written): read,
// hashed and kept when unchanged, under a cache stamped with the check's
// time. A fresh checkout's files, all just written, are thus not all read
// again at the next start. A missing, unreadable or damaged cache only
// makes Rebuild read every file, as it did without one.
//
// IMPORTANT: the cache is never trusted for what it does not check: a file
// changed in place with its size, both times and inode restored is not
// seen (Git has the same blind spot); Verify-like callers read the files.

// DefaultStatFile is the stat cache's file in the state directory.
const DefaultStatFile = "registry.stat"

// statRacy is how close to the cache's writing a file's modification may
// be and still be trusted: coarser than any file system's timestamps. A
// variable for the tests only.
var statRacy = 2 * time.Second

// statHeader begins the cache file.
const statHeader = "agentos-registry-stat 1"

// fileStat is what the cache keeps of a tool file.
type fileStat struct {
	size, mtime, ino, ctime int64
	hash                    string
}

// statOf is fi as the cache compares it (ino and ctime where the platform
// gives them, else 0).
func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	st.ino, st.ctime = vfs.InodeCtime(fi)
	return st
}

// statCache is a loaded cache: the lines by path, and when it was written.
type statCache struct {
	written int64 // ns
	files   map[string]fileStat
}

// hash returns the cached hash of the tool file p whose listing read fi,
// if the file is unchanged since the cache learnt it.
func (c statCache) hash(p string, fi fs.FileInfo) (string, bool) {
	if fi == nil || c.files == nil {
		return "", false
	}
	old, ok := c.files[p]
	cur := statOf(fi)
	cur.hash = old.hash
	if !ok || old != cur || cur.mtime >= c.written-int64(statRacy) {
		return "", false
	}
	return old.hash, true
}

// loadStatCache reads the cache; an absent or damaged one is empty.
func (r *Registry) loadStatCache() statCache {
	if r.state == nil {
		return statCache{}
	}
	b, err := r.state.ReadFile(r.statFile)
	if err != nil {
		return statCache{}
	}
	c, err := parseStatCache(b)
	if err != nil {
		r.log.Warn("registry: the stat cache is damaged; every tool file is read", slog.String("file", r.statFile), slog.Any("err", err))
		return statCache{}
	}
	return c
}

func parseStatCache(b []byte) (statCache, error) {
	c := statCache{files: map[string]fileStat{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	if !sc.Scan() {
		return statCache{}, fmt.Errorf("empty")
	}
	head, ok := strings.CutPrefix(sc.Text(), statHeader+" ")
	if !ok {
		return statCache{}, fmt.Errorf("header %q", sc.Text())
	}
	var err error
	if c.written, err = strconv.ParseInt(head, 10, 64); err != nil {
		return statCache{}, fmt.Errorf("header: %w", err)
	}
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 6)
		if len(f) != 6 {
			return statCache{}, fmt.Errorf("line %q", sc.Text())
		}
		var st fileStat
		for i, into := range []*int64{&st.size, &st.mtime, &st.ino, &st.ctime} {
			if *into, err = strconv.ParseInt(f[i], 10, 64); err != nil {
				return statCache{}, fmt.Errorf("line %q: %w", sc.Text(), err)
			}
		}
		st.hash = f[4]
		c.files[f[5]] = st
	}
	return c, sc.Err()
}

// saveStatCache writes the cache of files (path -> stat and hash), unless
// it is the loaded one and no file had to be read (read: a file changed,
// or was too recent to trust); a failure is logged, never an error (the
// next Rebuild reads the files).
func (r *Registry) saveStatCache(old statCache, files map[string]fileStat, read bool) {
	if r.state == nil || !read && old.written != 0 && sameStats(old.files, files) {
		return
	}
	written := time.Now().UnixNano()
	if r.writeStatCache(written, files) && racy(files, written) {
		r.mu.Lock()
		if !r.closed && r.verifyTimer == nil {
			r.verifyTimer = time.AfterFunc(statRacy+statRacy/4, r.verifyRacy)
		}
		r.mu.Unlock()
	}
}

// writeStatCache writes the cache of files, stamped written; a failure is
// logged (false), never an error (the next Rebuild reads the files). The
// caller MUST hold r.mut.
func (r *Registry) writeStatCache(written int64, files map[string]fileStat) bool {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s %d\n", statHeader, written)
	for p, st := range files {
		if strings.ContainsAny(p, "\n") {
			continue // never cached: read every time
		}
		fmt.Fprintf(&buf, "%d %d %d %d %s %s\n", st.size, st.mtime, st.ino, st.ctime, st.hash, p)
	}
	if err := r.state.WriteFile(r.statFile, buf.Bytes()); err != nil {
		r.log.Warn("registry: cannot write the stat cache; the next start reads every tool file", slog.String("file", r.statFile), slog.Any("err", err))
		return false
	}
	r.statWritten = written
	return true
}

// racy reports whether a file of files is too recent for a cache written
// at written to vouch for it.
func racy(files map[string]fileStat, written int64) bool {
	for _, st := range files {
		if st.mtime >= written-int64(statRacy) {
			return true
		}
	}
	return false
}

// verifyRacy is the verify timer's function: each file the cache holds
// but could not trust (modified within statRacy of its writing) and that
// has settled since is read again; one whose times, size, inode and
// content are still the cached ones is kept, any other dropped (the next
// Rebuild reads it). The cache is then written again, stamped with the
// time the check began: IMPORTANT: a file modified within statRacy of
// that time is not vouched for (it stays too recent under the new stamp).
// The files are read without the registry's write lock, which is taken
// only to write the cache, and not at all if a Rebuild wrote a newer one
// meanwhile.
func (r *Registry) verifyRacy() {
	r.mu.Lock()
	r.verifyTimer = nil
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return
	}
	c := r.loadStatCache()
	if c.files == nil {
		return
	}
	now := time.Now().UnixNano()
	for p, st := range c.files {
		if st.mtime < c.written-int64(statRacy) || st.mtime >= now-int64(statRacy) {
			continue // trusted already, or still too recent (stays so under now)
		}
		if !r.unchanged(p, st) {
			delete(c.files, p)
		}
	}
	r.mut.Lock() // Rebuild writes the cache under it
	defer r.mut.Unlock()
	r.mu.RLock()
	closed = r.closed
	r.mu.RUnlock()
	if !closed && r.statWritten == c.written {
		r.writeStatCache(now, c.files)
	}
}

// unchanged reports whether the tool file p is a regular file with the
// stat and the content hash of st.
func (r *Registry) unchanged(p string, st fileStat) bool {
	fi, err := r.jail.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	cur := statOf(fi)
	cur.hash = st.hash
	if cur != st {
		return false
	}
	src, err := r.jail.ReadFile(p)
	return err == nil && transpile.Hash(src) == st.hash
}

func sameStats(a, b map[string]fileStat) bool {
	if len(a) != len(b) {
		return false
	}
	for p, st := range b {
		if a[p] != st {
			return false
		}
	}
	return true
}

// readHook, when set (tests), is called with each tool file Rebuild reads.
var readHook func(path string)

// Seed is what the writer of the tool files knows of the files it has just
// written (the Git checkout of a fresh tool root: every tool file, with no
// stat cache yet): given as Options.Seed, Open's Rebuild takes the hash of
// a file whose stat is still the one the writer saw instead of reading it,
// as it does with the stat cache. Safe for concurrent use.
//
// IMPORTANT: the writer MUST call Wrote with the exact content written and
// the stat read from the file after writing it. The rule is the stat
// cache's without its racy-clean window (Git's checkout trusts its own
// writes the same way): another process rewriting such a file within the
// same tick of the file system's clock with the same size, before Open, is
// not seen. It is used by the first Rebuild only, then dropped.
type Seed struct {
	mu      sync.Mutex
	files   map[string]fileStat
	listed  map[string]fs.FileInfo // Listed's (listing.go)
	skipped []string
}

// NewSeed returns an empty seed.
func NewSeed() *Seed { return &Seed{files: map[string]fileStat{}} }

// Wrote records that the file p (slash-separated, relative to the tool
// root) was written with content, and stat'ed as fi right after.
func (s *Seed) Wrote(p string, content []byte, fi fs.FileInfo) {
	st := statOf(fi)
	st.hash = transpile.Hash(content)
	s.mu.Lock()
	if s.files != nil { // not used yet
		s.files[p] = st
	}
	s.mu.Unlock()
}

// release forgets the seed (used once: the files move on).
func (s *Seed) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.files, s.listed, s.skipped = nil, nil, nil
	s.mu.Unlock()
}

// hash returns the seeded hash of the tool file p whose listing read fi,
// if the file is still as its writer left it.
func (s *Seed) hash(p string, fi fs.FileInfo) (string, bool) {
	if s == nil || fi == nil {
		return "", false
	}
	s.mu.Lock()
	old, ok := s.files[p]
	s.mu.Unlock()
	cur := statOf(fi)
	cur.hash = old.hash
	if !ok || old != cur {
		return "", false
	}
	return old.hash, true
}
