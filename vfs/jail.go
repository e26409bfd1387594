package vfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// hidden lists the entry names a Jail never lists or serves, at any depth
// and whatever path (lexical or through links) leads to them: the Git
// repository and agentos' own state (journal, database, caches).
var hidden = map[string]bool{".git": true, ".agentos": true}

// ConfigFile is the node's configuration file at the top of the tool root.
// IMPORTANT: a Jail serves it only by its own name ("agentos.json"), never
// through a symbolic link, and a Sandbox never writes it.
const ConfigFile = "agentos.json"

// maxLinks bounds the symbolic links one resolution follows (Linux's own
// limit is 40).
const maxLinks = 40

// Clean turns a caller's path into a clean, slash-separated path relative to
// the jail root ("." is the root itself). It is purely lexical: absolute
// paths, `..` that leaves the root, backslashes, NUL bytes and other
// control characters are refused with an error wrapping ErrSecurity or
// ErrInvalidPath.
func Clean(p string) (string, error) {
	switch {
	case p == "":
		return "", &PathError{Op: "resolve", Path: p, Err: ErrInvalidPath, Hint: "give a path relative to the tool root, e.g. tools/math/fib.ts"}
	case strings.ContainsRune(p, 0):
		return "", &PathError{Op: "resolve", Path: p, Err: ErrInvalidPath, Hint: "the path contains a NUL byte"}
	case strings.ContainsFunc(p, isControl):
		// A newline in a path would reach the commit message ("write
		// PATH") and could forge its trailers (Agentos-Run, Agentos-Fence).
		return "", &PathError{Op: "resolve", Path: p, Err: ErrInvalidPath, Hint: "the path contains a control character (a newline, tab or escape): name files with printable characters"}
	case strings.ContainsRune(p, '\\'):
		return "", &PathError{Op: "resolve", Path: p, Err: ErrInvalidPath, Hint: "use forward slashes in paths"}
	case strings.HasPrefix(p, "/"):
		return "", securityErr("resolve", p, "absolute paths are refused; give a path relative to the tool root")
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", securityErr("resolve", p, "the path climbs out of the tool root with '..'")
	}
	for _, part := range strings.Split(c, "/") {
		if hidden[part] {
			return "", securityErr("resolve", p, part+" is internal (Git or agentos state) and not accessible")
		}
	}
	return c, nil
}

// isControl reports whether r is an ASCII control character (U+0000 to
// U+001F, U+007F); the upstream's checkout refuses such names too.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// Jail is a directory tree no path can leave.
type Jail struct {
	dir  string
	root *os.Root
	// rootFD is a descriptor of root's directory for fastRead, or -1;
	// fdMu keeps Close from closing it while a read opens a file by it.
	fdMu   sync.RWMutex
	rootFD int
}

// Open returns a Jail rooted at dir, which must exist and be a directory.
func Open(dir string) (*Jail, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Jail{dir: dir, root: r, rootFD: openRootFD(r)}, nil
}

// Dir returns the directory the jail is rooted at, as given to Open.
func (j *Jail) Dir() string { return j.dir }

// Close releases the jail's handle on its root directory.
func (j *Jail) Close() error {
	j.fdMu.Lock()
	closeRootFD(j.rootFD)
	j.rootFD = -1
	j.fdMu.Unlock()
	return j.root.Close()
}

// Remove deletes the file at p (not a directory). A symbolic link is
// removed itself, not its target.
func (j *Jail) Remove(p string) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	dir, err := j.resolve("remove", p, path.Dir(c))
	if err != nil {
		return err
	}
	return j.wrap("remove", p, j.root.Remove(path.Join(dir, path.Base(c))))
}

// Resolve returns the path p leads to inside the jail: clean, relative to
// the root, with every symbolic link on the way followed (the last one
// included). Every check (rights, write directories, mounts) MUST be made on
// this path, never on the path as written. It refuses, with an error
// wrapping ErrSecurity, a path that leaves the root (lexically or through a
// link, absolute link targets included), that passes through .git or
// .agentos at any depth, or that reaches the root's agentos.json through a
// link. A missing tail is resolved lexically from the last existing
// directory (a file about to be created).
func (j *Jail) Resolve(p string) (string, error) {
	c, err := Clean(p)
	if err != nil {
		return "", err
	}
	return j.resolve("resolve", p, c)
}

// resolve is Resolve for the clean path c (p is the caller's path, for
// errors).
func (j *Jail) resolve(op, p, c string) (string, error) {
	if r, ok := j.resolveFast(c); ok {
		return r, nil
	}
	return j.walk(op, p, c)
}

// walk is resolve component by component: an lstat of each prefix,
// following the links it meets.
func (j *Jail) walk(op, p, c string) (string, error) {
	todo := strings.Split(c, "/")
	var done []string
	links, missing := 0, false
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..": // only a link's target brings one: Clean removed the caller's
			if len(done) == 0 {
				return "", securityErr(op, p, "a symbolic link on the way climbs out of the tool root")
			}
			done = done[:len(done)-1]
			continue
		}
		if hidden[name] {
			return "", securityErr(op, p, "it leads (through a symbolic link) to "+path.Join(path.Join(done...), name)+", which is internal (Git or agentos state) and not accessible")
		}
		done = append(done, name)
		if missing {
			continue
		}
		rel := strings.Join(done, "/")
		fi, err := j.root.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			missing = true
			continue
		}
		if err != nil {
			return "", j.wrap(op, p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if links++; links > maxLinks {
			return "", &PathError{Op: op, Path: p, Err: ErrInvalidPath, Hint: fmt.Sprintf("more than %d symbolic links on the way (a loop?)", maxLinks)}
		}
		target, err := j.root.Readlink(rel)
		if err != nil {
			return "", j.wrap(op, p, err)
		}
		if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
			return "", securityErr(op, p, "the symbolic link "+rel+" points to "+strconv.Quote(target)+"; only relative links that stay inside the tool root are followed")
		}
		done = done[:len(done)-1]
		todo = append(strings.Split(target, "/"), todo...)
	}
	r := strings.Join(done, "/")
	if r == "" {
		r = "."
	}
	if r == ConfigFile && c != ConfigFile {
		return "", securityErr(op, p, "it leads through a symbolic link to "+ConfigFile+", which is reachable only by its own name")
	}
	return r, nil
}

// ReadFile returns the content of the file at p. It refuses (ErrSecurity) a
// regular file with more than one hard link: a hard link cannot be told from
// the file it shares (.agentos/journal.db, a key outside the root), so none
// is served.
func (j *Jail) ReadFile(p string) ([]byte, error) {
	return j.readMax(p, 0)
}

// readMax is ReadFile refusing, with a *TooLargeError, a file of more than
// max bytes (max <= 0: no limit).
func (j *Jail) readMax(p string, max int64) ([]byte, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	if b, ok, err := j.readBeneath(p, c, max, nil); ok {
		return b, err
	}
	r, err := j.resolve("read", p, c)
	if err != nil {
		return nil, err
	}
	return j.readResolved(p, r, max, nil)
}

// ReadFileResolved is ReadFile resolving p once: it returns the content and
// where p resolved (Resolve), and, when check is not nil, calls it on the
// resolved path before reading and returns its error instead of reading.
func (j *Jail) ReadFileResolved(p string, check func(resolved string) error) ([]byte, string, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, "", err
	}
	if b, ok, err := j.readBeneath(p, c, 0, check); ok {
		return b, c, err
	}
	r, err := j.resolve("read", p, c)
	if err != nil {
		return nil, "", err
	}
	if check != nil {
		if err := check(r); err != nil {
			return nil, r, err
		}
	}
	b, err := j.readResolved(p, r, 0, nil)
	return b, r, err
}

// readResolved reads the resolved path r (p is the caller's path, for
// errors).
// readResolved reads the file at resolved path r (p as the reader named
// it). With max > 0, a file of more than max bytes is refused with a
// *TooLargeError, before check; check, when not nil, is called once the
// size is known and its error returned instead of reading.
func (j *Jail) readResolved(p, r string, max int64, check func() error) ([]byte, error) {
	if b, ok, err := j.fastRead(p, r, max, check); ok {
		return b, err
	}
	f, err := j.root.Open(r)
	if err != nil {
		if check != nil { // the check's verdict comes first, as it would before opening
			if cerr := check(); cerr != nil {
				return nil, cerr
			}
		}
		return nil, j.wrap("read", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, j.wrap("read", p, err)
	}
	if max > 0 && fi.Size() > max {
		return nil, &TooLargeError{Path: p, Size: fi.Size(), Max: max}
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	if fi.Mode().IsRegular() && links(fi) > 1 {
		return nil, securityErr("read", p, fmt.Sprintf("the file has %d hard links; agentos never reads a hard-linked file, since it may be another file's twin (its journal, a key): copy it instead", links(fi)))
	}
	if fi.IsDir() {
		return nil, &PathError{Op: "read", Path: p, Err: ErrInvalidPath, Hint: "it is a directory; use list_files"}
	}
	b, err := io.ReadAll(f)
	if err == nil && max > 0 && int64(len(b)) > max { // it grew since
		return nil, &TooLargeError{Path: p, Size: int64(len(b)), Max: max}
	}
	return b, j.wrap("read", p, err)
}

// TooLargeError is a read refused because the file holds more than the
// reader's limit (Sandbox.ReadFileMax).
type TooLargeError struct {
	Path      string // as the reader named it
	Size, Max int64  // the file's size and the limit, in bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("read %s: the file has %d bytes, more than the %d that may be read at once", e.Path, e.Size, e.Max)
}

// WriteFile writes data to the file at p, creating missing parent
// directories, and replaces the file atomically (write to a temporary file
// in the same directory, then rename) so readers never see half a file. A
// symbolic link on the way is followed (the file written is the one Resolve
// names); a hard-linked file is replaced, never written through.
func (j *Jail) WriteFile(p string, data []byte) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	if c == "." {
		return &PathError{Op: "write", Path: p, Err: ErrInvalidPath, Hint: "the path names the root directory, not a file"}
	}
	r, err := j.resolve("write", p, c)
	if err != nil {
		return err
	}
	return j.writeResolved(p, r, data)
}

// writeResolved writes the resolved path r (p is the caller's path).
func (j *Jail) writeResolved(p, r string, data []byte) error {
	if r == "." {
		return &PathError{Op: "write", Path: p, Err: ErrInvalidPath, Hint: "the path names the root directory, not a file"}
	}
	if j.writeFast(r, data) {
		return nil
	}
	if dir := path.Dir(r); dir != "." {
		if err := j.root.MkdirAll(dir, 0o755); err != nil {
			return j.wrap("write", p, err)
		}
	}
	tmp := path.Join(path.Dir(r), tempName(path.Base(r)))
	f, err := j.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return j.wrap("write", p, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = j.root.Remove(tmp)
		return j.wrap("write", p, werr)
	}
	if err := j.root.Rename(tmp, r); err != nil {
		_ = j.root.Remove(tmp)
		return j.wrap("write", p, err)
	}
	return nil
}

// tempName is the name a write of the file base goes through: a name of
// its own per write (O_EXCL), so that two concurrent writers of one path
// each rename a whole file; the last rename wins, none tears.
func tempName(base string) string {
	var rnd [6]byte
	rand.Read(rnd[:])
	return "." + base + "." + hex.EncodeToString(rnd[:]) + ".agentos-tmp"
}

// OpenAppend opens the file at p for appending (created, mode 0600, with
// its missing parent directories, when absent): every Write adds at the
// end. Like WriteFile it follows symbolic links inside the jail only, and
// like ReadFile it refuses (ErrSecurity) a file with more than one hard
// link. The caller closes the file.
func (j *Jail) OpenAppend(p string) (*os.File, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	r, err := j.resolve("write", p, c)
	if err != nil {
		return nil, err
	}
	if r == "." {
		return nil, &PathError{Op: "write", Path: p, Err: ErrInvalidPath, Hint: "the path names the root directory, not a file"}
	}
	if dir := path.Dir(r); dir != "." {
		if err := j.root.MkdirAll(dir, 0o755); err != nil {
			return nil, j.wrap("write", p, err)
		}
	}
	f, err := j.root.OpenFile(r, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, j.wrap("write", p, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || links(fi) > 1 {
		f.Close()
		if err != nil {
			return nil, j.wrap("write", p, err)
		}
		return nil, securityErr("write", p, "not a regular file of its own (a directory, a device or a hard link): agentos appends only to its own files")
	}
	return f, nil
}

// Stat returns the file info of p, following symlinks inside the jail (see
// Resolve).
func (j *Jail) Stat(p string) (fs.FileInfo, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	r, err := j.resolve("stat", p, c)
	if err != nil {
		return nil, err
	}
	fi, err := j.root.Stat(r)
	return fi, j.wrap("stat", p, err)
}

// List returns the files under dir, recursively, as slash-separated paths
// relative to the jail root, sorted: the Path of each of Entries.
func (j *Jail) List(dir string) ([]string, error) {
	es, err := j.Entries(dir)
	if es == nil {
		return nil, err
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Path
	}
	return out, err
}

// Links is the number of hard links to the file fi describes (1 where the
// platform does not tell): a listing (Entries) leaves out a regular file
// with more than one, which the jail never reads.
func Links(fi fs.FileInfo) uint64 { return links(fi) }

// Entry is one file a listing found.
type Entry struct {
	// Path is where the listing found it, relative to the jail root, below
	// the resolved directory that was listed.
	Path string
	// Resolved is the file it is: Path itself, or where the symbolic link
	// at Path leads (Resolve). Checks MUST be made on Resolved.
	Resolved string
	// Info is what the listing read of a regular file (size, modification
	// time ...), nil for a symbolic link: a caller can tell an unchanged
	// file without reading it again.
	Info fs.FileInfo
}

// Entries lists the files under dir, recursively, sorted by path. dir is
// resolved first (Resolve), so the paths are below where dir leads.
// Directories are not listed themselves; hidden bookkeeping directories and
// hard-linked files (ReadFile refuses them) are skipped; a symbolic link is listed only when it leads to a regular file
// Resolve accepts (links to directories are not followed: a listing never
// loops or climbs).
func (j *Jail) Entries(dir string) ([]Entry, error) {
	c, err := Clean(dir)
	if err != nil {
		return nil, err
	}
	r, err := j.resolve("list", dir, c)
	if err != nil {
		return nil, err
	}
	return j.entries(dir, r)
}

// entries lists the resolved directory r (dir is the caller's path).
func (j *Jail) entries(dir, r string) ([]Entry, error) {
	fi, err := j.root.Stat(r)
	if err != nil {
		return nil, j.wrap("list", dir, err)
	}
	if !fi.IsDir() {
		return nil, &PathError{Op: "list", Path: dir, Err: ErrInvalidPath, Hint: "not a directory; use read_file for a file"}
	}
	var out []Entry
	err = fs.WalkDir(j.root.FS(), r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == r {
				return err
			}
			return nil // an entry vanished or is unreadable: skip it, keep listing
		}
		if d.IsDir() {
			if hidden[path.Base(p)] && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".agentos-tmp") {
			return nil
		}
		e := Entry{Path: p, Resolved: p}
		if d.Type().IsRegular() {
			fi, ierr := d.Info()
			if ierr != nil || links(fi) > 1 {
				return nil // vanished, or hard-linked (never read, so not listed)
			}
			e.Info = fi
		}
		if d.Type()&fs.ModeSymlink != 0 {
			t, rerr := j.resolve("list", p, p)
			if rerr != nil {
				return nil // escaping, hidden or looping link
			}
			if fi, serr := j.root.Stat(t); serr != nil || !fi.Mode().IsRegular() || links(fi) > 1 {
				return nil // dangling, a directory (never followed) or hard-linked
			}
			e.Resolved = t
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, j.wrap("list", dir, err)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out, nil
}

// wrap turns os.Root's errors into the package's errors.
func (j *Jail) wrap(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var pe *PathError
	if errors.As(err, &pe) {
		return err
	}
	// os.Root refuses escapes with an unexported "path escapes from parent".
	if strings.Contains(err.Error(), "escapes") {
		return securityErr(op, p, "it resolves (through a symbolic link) outside the tool root")
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &PathError{Op: op, Path: p, Err: ErrNotFound}
	}
	return &PathError{Op: op, Path: p, Err: err}
}
