package vfs

import (
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
)

// Mount points of the sandbox namespace.
const (
	LibMount = "/lib"
	TmpMount = "/tmp"
)

// SandboxConfig configures the namespace a tool run sees.
type SandboxConfig struct {
	// ToolsDir is the directory, relative to the tool root, mounted read-only
	// at /lib. Empty means "tools".
	ToolsDir string
	// WriteDirs are directories, relative to the tool root, a tool may write
	// under. Empty means a tool can write only under /tmp.
	WriteDirs []string
	// TempDir is the parent of per-run scratch directories. Empty means
	// os.TempDir().
	TempDir string
	// Rights are the rights of the run's caller. When set, every operation
	// on the tool root (/lib and root-relative paths; /tmp is the run's own)
	// MUST pass them on the resolved path, on top of the sandbox's own rules:
	// a tool never does more than its caller could do directly. nil means no
	// caller restriction (the operator's own runs: agentos exec, tests).
	Rights Rights
}

// Access is what a Rights check is asked about.
type Access string

// The accesses a Sandbox asks its Rights about. They are spelt like the
// capability rights of the same name.
const (
	AccessRead  Access = "read"
	AccessWrite Access = "write"
)

// Rights say what the caller of a run may do on the tool root. path is
// always resolved (Jail.Resolve) and relative to the root; a directory being
// listed is given as "dir/" (its contents' scope), the root itself as "".
type Rights interface {
	// Allow authorizes one operation: nil, or an error saying which right
	// on which path is missing. It may count the check (a use, a refusal
	// event).
	Allow(a Access, path string) error
	// Covers reports whether the caller holds a on path, with no side
	// effect: for filtering what a listing shows, never for authorizing.
	Covers(a Access, path string) bool
}

// Sandbox is the filesystem of one tool run: see the package documentation.
type Sandbox struct {
	root      *Jail
	toolsDir  string
	writeDirs []string
	tempDir   string
	rights    Rights

	mu      sync.Mutex
	scratch *Jail // created on first use of /tmp
	closed  bool
}

// NewSandbox returns the namespace of one run over the tool root. The caller
// MUST Close it when the run ends.
func NewSandbox(root *Jail, cfg SandboxConfig) *Sandbox {
	s := &Sandbox{root: root, toolsDir: "tools", tempDir: cfg.TempDir, rights: cfg.Rights}
	if cfg.ToolsDir != "" {
		s.toolsDir = path.Clean(cfg.ToolsDir)
	}
	for _, d := range cfg.WriteDirs {
		if c, err := Clean(d); err == nil && c != "." {
			s.writeDirs = append(s.writeDirs, c)
		}
	}
	return s
}

// ReadFile reads p in the sandbox namespace.
func (s *Sandbox) ReadFile(p string) ([]byte, error) {
	j, rel, area, err := s.resolve("read", p)
	if err != nil {
		return nil, err
	}
	if area == areaTmp {
		b, err := j.ReadFile(rel)
		return b, rename(err, p)
	}
	if err := s.allow("read", p, AccessRead, rel); err != nil {
		return nil, err
	}
	b, err := j.readResolved(p, rel, 0, nil)
	return b, rename(err, p)
}

// ReadFileMax is ReadFile refusing, with a *TooLargeError, a file of more
// than max bytes (max <= 0: no limit). It resolves p once: the same
// answers and errors as Size then ReadFile, for one walk of the path.
func (s *Sandbox) ReadFileMax(p string, max int64) ([]byte, error) {
	if rel, ok := s.lexical(p); ok && (s.rights == nil || s.rights.Covers(AccessRead, rel)) {
		// A path with no symbolic link on the way is its own resolution:
		// the fast read refuses every link (then nothing was done, and
		// the walk below resolves it), so the walk's lstat of each
		// component is not needed first.
		allow := func() error { return s.allow("read", p, AccessRead, rel) }
		if b, done, err := s.root.fastRead(p, rel, max, allow); done {
			return b, rename(err, p)
		}
	}
	j, rel, area, err := s.resolve("read", p)
	if err != nil {
		return nil, err
	}
	if area == areaTmp {
		b, err := j.readMax(rel, max)
		return b, rename(err, p)
	}
	allow := func() error { return s.allow("read", p, AccessRead, rel) }
	if s.rights != nil && !s.rights.Covers(AccessRead, rel) {
		// As Size then ReadFile: no size for a file the caller may not
		// read, and the read's own refusal.
		if err := allow(); err != nil {
			return nil, err
		}
		allow = nil
	}
	// IMPORTANT: a file too large is refused before Allow, as Size did: no
	// use of the caller's token is counted for it.
	b, err := j.readResolved(p, rel, max, allow)
	return b, rename(err, p)
}

// ToolFile reports whether p names a file of the tools directory with no
// symbolic link on its way, and its root-relative path: what a run may pin
// (read once, then answer from memory) once a read of p has succeeded.
// IMPORTANT: it authorizes nothing; every read of a pinned file MUST still
// pass ReadAllowed, and a path ToolFile refuses MUST be read as before.
func (s *Sandbox) ToolFile(p string) (rel string, ok bool) {
	if rel, ok = s.ToolPath(p); !ok {
		return "", false
	}
	resolved, err := s.root.resolve("read", p, rel)
	if err != nil || resolved != rel {
		return "", false
	}
	return rel, true
}

// ToolPath is ToolFile without looking at the disk: the root-relative path
// p names in the tools directory, links not considered (a replay's view:
// the recording said which reads were of a file ToolFile accepted).
func (s *Sandbox) ToolPath(p string) (rel string, ok bool) {
	rel, ok = s.lexical(p)
	if !ok || rel == s.toolsDir || !under(rel, s.toolsDir) {
		return "", false
	}
	return rel, true
}

// ReadCovered reports, with no side effect, whether the caller's rights
// cover a read of rel (a path ToolFile returned): always with no rights.
func (s *Sandbox) ReadCovered(rel string) bool {
	return s.rights == nil || s.rights.Covers(AccessRead, rel)
}

// ReadAllowed authorizes one read of p, whose root-relative path is rel (a
// path ToolFile returned), exactly as a read of it does (Rights.Allow, which
// may count a use or a refusal): nil, or the refusal the read would return.
func (s *Sandbox) ReadAllowed(p, rel string) error {
	return rename(s.allow("read", p, AccessRead, rel), p)
}

// Size returns the size in bytes of the file at p in the sandbox namespace.
// A file the caller may not read has no size (ErrSecurity, with no refusal
// counted: the read that follows reports it).
func (s *Sandbox) Size(p string) (int64, error) {
	j, rel, area, err := s.resolve("stat", p)
	if err != nil {
		return 0, err
	}
	if area != areaTmp && s.rights != nil && !s.rights.Covers(AccessRead, rel) {
		return 0, securityErr("stat", p, "the caller may not read "+rel)
	}
	fi, err := j.root.Stat(rel)
	if err != nil {
		return 0, rename(j.wrap("stat", p, err), p)
	}
	return fi.Size(), nil
}

// WriteFile writes p in the sandbox namespace: under /tmp, or under one of
// the configured write directories, where the path resolves (through any
// link) and the caller holds the write right there. agentos.json is never
// written.
func (s *Sandbox) WriteFile(p string, data []byte) error {
	j, rel, area, err := s.resolve("write", p)
	if err != nil {
		return err
	}
	switch {
	case area == areaTmp:
		return rename(j.WriteFile(rel, data), p)
	case area == areaLib:
		return securityErr("write", p, "/lib is read-only; "+s.writeHint())
	case rel == ConfigFile:
		return securityErr("write", p, "a tool never writes the node's configuration")
	case !s.writable(rel):
		hint := s.writeHint()
		if c, _ := Clean(p); c != rel {
			hint = "it resolves (through a symbolic link) to " + rel + ", and " + hint
		}
		return securityErr("write", p, hint)
	}
	if err := s.allow("write", p, AccessWrite, rel); err != nil {
		return err
	}
	return rename(j.writeResolved(p, rel, data), p)
}

func (s *Sandbox) writeHint() string {
	hint := "writes are allowed only under /tmp"
	if len(s.writeDirs) > 0 {
		hint += " and " + strings.Join(s.writeDirs, ", ")
	}
	return hint
}

// writable reports whether the resolved path rel is under a write directory.
func (s *Sandbox) writable(rel string) bool {
	for _, d := range s.writeDirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// List lists the files under dir in the sandbox namespace, recursively, as
// paths in that namespace (/lib/..., /tmp/..., or root-relative). On the
// tool root the caller needs the read right on the directory (resolved) and
// sees only the files it may read; under /lib a link leading out of the
// tools directory is not listed.
func (s *Sandbox) List(dir string) ([]string, error) {
	j, rel, area, err := s.resolve("list", dir)
	if err != nil {
		return nil, err
	}
	if area == areaTmp {
		names, err := j.List(rel)
		if err != nil {
			return nil, rename(err, dir)
		}
		for i, n := range names {
			names[i] = TmpMount + "/" + n
		}
		return names, nil
	}
	scope := ""
	if rel != "." {
		scope = rel + "/"
	}
	if err := s.allow("list", dir, AccessRead, scope); err != nil {
		return nil, err
	}
	es, err := j.entries(dir, rel)
	if err != nil {
		return nil, rename(err, dir)
	}
	names := []string{}
	for _, e := range es {
		if area == areaLib && !under(e.Resolved, s.toolsDir) {
			continue
		}
		if s.rights != nil && !s.rights.Covers(AccessRead, e.Resolved) {
			continue
		}
		if area == areaLib {
			names = append(names, LibMount+"/"+strings.TrimPrefix(e.Path, s.toolsDir+"/"))
		} else {
			names = append(names, e.Path)
		}
	}
	return names, nil
}

// allow asks the caller's rights (when set) about the resolved path rel;
// a refusal is a security error naming the path, where it resolves and
// the missing right.
func (s *Sandbox) allow(op, p string, a Access, rel string) error {
	if s.rights == nil {
		return nil
	}
	err := s.rights.Allow(a, rel)
	if err == nil {
		return nil
	}
	target := rel
	if target == "" {
		target = "the tool root"
	}
	return securityErr(op, p, fmt.Sprintf("the tool runs with its caller's rights, and the caller may not %s %s (%v)", a, target, err))
}

// Close wipes the run's scratch directory. It is safe to call twice.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.scratch == nil {
		return nil
	}
	dir := s.scratch.Dir()
	s.scratch.Close()
	s.scratch = nil
	return os.RemoveAll(dir)
}

// The areas of the namespace.
const (
	areaTmp  = "tmp"
	areaLib  = "lib"
	areaRoot = "root"
)

// resolve maps a sandbox path to a jail and a path inside it. On the tool
// root (areaLib, areaRoot) the path is resolved (Jail.Resolve): links are
// followed, and a /lib path that leads out of the tools directory is
// refused. Under /tmp it is the clean path in the run's scratch jail.
func (s *Sandbox) resolve(op, p string) (j *Jail, rel string, area string, err error) {
	switch {
	case isUnder(p, TmpMount):
		rel, err = mountRel(p, TmpMount)
		if err != nil {
			return nil, "", "", err
		}
		j, err = s.scratchJail()
		return j, rel, areaTmp, err
	case isUnder(p, LibMount):
		rel, err = mountRel(p, LibMount)
		if err != nil {
			return nil, "", "", err
		}
		lexical := path.Join(s.toolsDir, rel)
		if rel, err = s.root.resolve(op, p, lexical); err != nil {
			return nil, "", "", err
		}
		if !under(rel, s.toolsDir) {
			return nil, "", "", securityErr(op, p, "it resolves (through a symbolic link) to "+rel+", outside /lib (the tools directory "+s.toolsDir+")")
		}
		return s.root, rel, areaLib, nil
	case strings.HasPrefix(p, "/"):
		return nil, "", "", securityErr(op, p, "a tool sees only /lib (the tools, read-only), /tmp (scratch) and paths relative to the tool root")
	}
	c, err := Clean(p)
	if err != nil {
		return nil, "", "", err
	}
	if rel, err = s.root.resolve(op, p, c); err != nil {
		return nil, "", "", err
	}
	return s.root, rel, areaRoot, nil
}

// lexical is the root-relative path p names if no symbolic link is on its
// way (under the tool root or /lib, not /tmp), for a read that refuses
// links; ok false: p needs resolve (or is refused there).
func (s *Sandbox) lexical(p string) (rel string, ok bool) {
	switch {
	case isUnder(p, TmpMount):
		return "", false
	case isUnder(p, LibMount):
		r, err := mountRel(p, LibMount)
		if err != nil {
			return "", false
		}
		p = path.Join(s.toolsDir, r)
	case strings.HasPrefix(p, "/"):
		return "", false
	}
	c, err := Clean(p) // refuses internal names (.git, .agentos) and climbs
	if err != nil || c == "." {
		return "", false
	}
	return c, true
}

// under reports whether the root-relative path p is dir or below it.
func under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

func (s *Sandbox) scratchJail() (*Jail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &PathError{Op: "resolve", Path: TmpMount, Err: ErrInvalidPath, Hint: "the run has ended"}
	}
	if s.scratch != nil {
		return s.scratch, nil
	}
	dir, err := os.MkdirTemp(s.tempDir, "agentos-run-")
	if err != nil {
		return nil, err
	}
	j, err := Open(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.scratch = j
	return j, nil
}

// mountRel returns the clean path of p below mount ("." for the mount itself).
func mountRel(p, mount string) (string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, mount), "/")
	if rest == "" {
		return ".", nil
	}
	return Clean(rest)
}

// isUnder reports whether p is mount or below it.
func isUnder(p, mount string) bool {
	return p == mount || strings.HasPrefix(p, mount+"/")
}

// rename makes an error name the sandbox path the tool used.
func rename(err error, p string) error {
	if pe, ok := err.(*PathError); ok && pe.Path != p {
		cp := *pe
		cp.Path = p
		return &cp
	}
	if te, ok := err.(*TooLargeError); ok && te.Path != p {
		cp := *te
		cp.Path = p
		return &cp
	}
	return err
}
