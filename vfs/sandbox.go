package vfs

import (
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
}

// Sandbox is the filesystem of one tool run: see the package documentation.
type Sandbox struct {
	root      *Jail
	toolsDir  string
	writeDirs []string
	tempDir   string

	mu      sync.Mutex
	scratch *Jail // created on first use of /tmp
	closed  bool
}

// NewSandbox returns the namespace of one run over the tool root. The caller
// MUST Close it when the run ends.
func NewSandbox(root *Jail, cfg SandboxConfig) *Sandbox {
	s := &Sandbox{root: root, toolsDir: "tools", tempDir: cfg.TempDir}
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
	j, rel, _, err := s.resolve("read", p)
	if err != nil {
		return nil, err
	}
	b, err := j.ReadFile(rel)
	return b, rename(err, p)
}

// Size returns the size in bytes of the file at p in the sandbox namespace.
func (s *Sandbox) Size(p string) (int64, error) {
	j, rel, _, err := s.resolve("stat", p)
	if err != nil {
		return 0, err
	}
	fi, err := j.Stat(rel)
	if err != nil {
		return 0, rename(err, p)
	}
	return fi.Size(), nil
}

// WriteFile writes p in the sandbox namespace: under /tmp, or under one of
// the configured write directories.
func (s *Sandbox) WriteFile(p string, data []byte) error {
	j, rel, writable, err := s.resolve("write", p)
	if err != nil {
		return err
	}
	if !writable {
		hint := "writes are allowed only under /tmp"
		if len(s.writeDirs) > 0 {
			hint += " and " + strings.Join(s.writeDirs, ", ")
		}
		return securityErr("write", p, hint)
	}
	return rename(j.WriteFile(rel, data), p)
}

// List lists the files under dir in the sandbox namespace, recursively, as
// paths in that namespace (/lib/..., /tmp/..., or root-relative).
func (s *Sandbox) List(dir string) ([]string, error) {
	j, rel, _, err := s.resolve("list", dir)
	if err != nil {
		return nil, err
	}
	names, err := j.List(rel)
	if err != nil {
		return nil, rename(err, dir)
	}
	prefix := ""
	switch {
	case j == s.scratch:
		prefix = TmpMount + "/"
	case isUnder(dir, LibMount):
		prefix = LibMount + "/"
	}
	for i, n := range names {
		if prefix == LibMount+"/" {
			n = strings.TrimPrefix(n, s.toolsDir+"/")
		}
		names[i] = prefix + n
	}
	return names, nil
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

// resolve maps a sandbox path to a jail and a path inside it.
func (s *Sandbox) resolve(op, p string) (j *Jail, rel string, writable bool, err error) {
	switch {
	case isUnder(p, TmpMount):
		rel, err = mountRel(p, TmpMount)
		if err != nil {
			return nil, "", false, err
		}
		j, err = s.scratchJail()
		return j, rel, true, err
	case isUnder(p, LibMount):
		rel, err = mountRel(p, LibMount)
		if err != nil {
			return nil, "", false, err
		}
		return s.root, path.Join(s.toolsDir, rel), false, nil
	case strings.HasPrefix(p, "/"):
		return nil, "", false, securityErr(op, p, "a tool sees only /lib (the tools, read-only), /tmp (scratch) and paths relative to the tool root")
	}
	rel, err = Clean(p)
	if err != nil {
		return nil, "", false, err
	}
	for _, d := range s.writeDirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return s.root, rel, true, nil
		}
	}
	return s.root, rel, false, nil
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
	return err
}
