package vfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// hidden lists the root-level entries a Jail never lists or serves: the Git
// repository and agentos' own state (journal, caches).
var hidden = map[string]bool{".git": true, ".agentos": true}

// Clean turns a caller's path into a clean, slash-separated path relative to
// the jail root ("." is the root itself). It is purely lexical: absolute
// paths, `..` that leaves the root, backslashes, and NUL bytes are refused
// with an error wrapping ErrSecurity or ErrInvalidPath.
func Clean(p string) (string, error) {
	switch {
	case p == "":
		return "", &PathError{Op: "resolve", Path: p, Err: ErrInvalidPath, Hint: "give a path relative to the tool root, e.g. tools/math/fib.ts"}
	case strings.ContainsRune(p, 0):
		return "", &PathError{Op: "resolve", Path: p, Err: ErrInvalidPath, Hint: "the path contains a NUL byte"}
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

// Jail is a directory tree no path can leave.
type Jail struct {
	dir  string
	root *os.Root
}

// Open returns a Jail rooted at dir, which must exist and be a directory.
func Open(dir string) (*Jail, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Jail{dir: dir, root: r}, nil
}

// Dir returns the directory the jail is rooted at, as given to Open.
func (j *Jail) Dir() string { return j.dir }

// Close releases the jail's handle on its root directory.
func (j *Jail) Close() error { return j.root.Close() }

// Remove deletes the file at p (not a directory).
func (j *Jail) Remove(p string) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	return j.wrap("remove", p, j.root.Remove(c))
}

// ReadFile returns the content of the file at p.
func (j *Jail) ReadFile(p string) ([]byte, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	b, err := j.root.ReadFile(c)
	return b, j.wrap("read", p, err)
}

// WriteFile writes data to the file at p, creating missing parent
// directories, and replaces the file atomically (write to a temporary file
// in the same directory, then rename) so readers never see half a file.
func (j *Jail) WriteFile(p string, data []byte) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	if c == "." {
		return &PathError{Op: "write", Path: p, Err: ErrInvalidPath, Hint: "the path names the root directory, not a file"}
	}
	if dir := path.Dir(c); dir != "." {
		if err := j.root.MkdirAll(dir, 0o755); err != nil {
			return j.wrap("write", p, err)
		}
	}
	// A temp name of its own per write (O_EXCL): two concurrent writers of
	// one path each rename a whole file; the last rename wins, none tears.
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := path.Join(path.Dir(c), "."+path.Base(c)+"."+hex.EncodeToString(rnd[:])+".agentos-tmp")
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
	if err := j.root.Rename(tmp, c); err != nil {
		_ = j.root.Remove(tmp)
		return j.wrap("write", p, err)
	}
	return nil
}

// Stat returns the file info of p, following symlinks inside the jail.
func (j *Jail) Stat(p string) (fs.FileInfo, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	fi, err := j.root.Stat(c)
	return fi, j.wrap("stat", p, err)
}

// List returns the files under dir, recursively, as slash-separated paths
// relative to the jail root, sorted. Directories are not listed themselves;
// hidden bookkeeping directories and symlinks that leave the jail are skipped.
func (j *Jail) List(dir string) ([]string, error) {
	c, err := Clean(dir)
	if err != nil {
		return nil, err
	}
	fi, err := j.root.Stat(c)
	if err != nil {
		return nil, j.wrap("list", dir, err)
	}
	if !fi.IsDir() {
		return nil, &PathError{Op: "list", Path: dir, Err: ErrInvalidPath, Hint: "not a directory; use read_file for a file"}
	}
	var out []string
	err = fs.WalkDir(j.root.FS(), c, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == c {
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
		if d.Type()&fs.ModeSymlink != 0 {
			if _, serr := j.root.Stat(p); serr != nil {
				return nil // dangling or escaping link
			}
		}
		if strings.HasSuffix(p, ".agentos-tmp") {
			return nil
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, j.wrap("list", dir, err)
	}
	sort.Strings(out)
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
