// Package scaffold lays out a new tool root (agentos init): the
// configuration file with every default spelled out, the tools directory,
// the registry file, a .gitignore for agentos' state, and, unless told
// otherwise, a bare Git repository beside the root as its upstream.
//
// It names the files of a tool root (ConfigFile, RegistryFile, StateDir,
// DefaultTools); package agentos re-exports them. Reading and validating
// the configuration is package agentos's (LoadConfig); agentos.Init
// validates an existing one, then calls Init.
//
// IMPORTANT: it imports no actor package (internal/archcheck's rule): the
// bare repository is made by the function the composition root passes
// (Options.InitBare: repo.InitBare of actors/git/repo).
package scaffold

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Files and directories of a tool root.
const (
	ConfigFile   = "agentos.json" // the tool root's configuration
	RegistryFile = "meta.json"    // the tool registry (filled by the registry)
	DefaultTools = "tools"        // where tools live, mounted at /lib
	StateDir     = ".agentos"     // agentos' own state (journal, caches); never visible to tools
)

// Options configure Init.
type Options struct {
	// ToolsDir is the tools directory, relative to the root: the existing
	// configuration's (agentos.Config.Tools), or DefaultTools.
	ToolsDir string
	// Upstream is the Git upstream written into agentos.json. Empty: a bare
	// repository is created beside the tool root (DIR.git) and used. A
	// missing local one (LocalUpstream) is created as a bare repository.
	Upstream string
	// NoGit leaves Git out: tools are written to the working tree only.
	NoGit bool
	// InitBare creates a bare Git repository at path whose HEAD names
	// branch, and is a no-op on one that exists already (repo.InitBare,
	// actors/git/repo). REQUIRED unless NoGit: the composition root passes
	// it, so that this package imports no actor package.
	InitBare func(path, branch string) error
}

// Init lays out a tool root in dir: agentos.json, the tools directory,
// meta.json and a .gitignore for agentos' state. It is idempotent: existing
// files are never overwritten. It returns the paths it created. Without Git
// (NoGit) tools stay in the working tree; otherwise a new agentos.json names
// opts.Upstream, or a bare repository Init creates beside dir (DIR.git).
//
// IMPORTANT: Init does not read an existing agentos.json; the caller MUST
// validate it first and pass its tools directory (agentos.Init does).
func Init(dir string, opts Options) (created []string, err error) {
	toolsDir := opts.ToolsDir
	if toolsDir == "" {
		toolsDir = DefaultTools
	}
	if !opts.NoGit && opts.InitBare == nil {
		return nil, errNoInitBare
	}
	_, statErr := os.Stat(filepath.Join(dir, ConfigFile))
	newConfig := errors.Is(statErr, fs.ErrNotExist)
	// A local upstream is checked (and made) before anything else, so that
	// a refusal leaves nothing half-made.
	if newConfig && !opts.NoGit && opts.Upstream != "" {
		made, err := ensureUpstream(dir, opts.Upstream, opts.InitBare)
		if err != nil {
			return nil, err
		}
		if made != "" {
			created = append(created, made)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the tool root %s: %w", dir, err)
	}
	tools := filepath.Join(dir, filepath.FromSlash(toolsDir))
	if _, err := os.Stat(tools); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(tools, 0o700); err != nil {
			return created, err
		}
		created = append(created, toolsDir+"/")
	}
	upstream := ""
	if newConfig && !opts.NoGit {
		if upstream = opts.Upstream; upstream == "" {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return created, err
			}
			bare := abs + ".git"
			if _, err := os.Stat(bare); errors.Is(err, fs.ErrNotExist) {
				if err := opts.InitBare(bare, pushedBranch); err != nil {
					return created, fmt.Errorf("creating the Git upstream %s: %w", bare, err)
				}
				created = append(created, bare+" (bare Git upstream)")
			}
			upstream = filepath.Join("..", filepath.Base(bare))
		}
	}
	for _, f := range []struct{ name, content string }{
		{ConfigFile, configFile(upstream)},
		{RegistryFile, "{\n  \"tools\": {}\n}\n"},
		{".gitignore", StateDir + "/\n"},
	} {
		ok, err := createNew(filepath.Join(dir, f.name), f.content)
		if err != nil {
			return created, err
		}
		if ok {
			created = append(created, f.name)
		}
	}
	return created, nil
}

// LocalUpstream returns the path of a Git upstream that is a local
// repository: a path (relative to the tool root or absolute) or a file://
// URL; ok is false for a remote one (https://, ssh://, user@host:path).
func LocalUpstream(upstream string) (path string, ok bool) {
	if rest, isFile := strings.CutPrefix(upstream, "file://"); isFile {
		if u, err := url.Parse(upstream); err == nil && u.Path != "" {
			return filepath.FromSlash(u.Path), true
		}
		return filepath.FromSlash(rest), true
	}
	if strings.Contains(upstream, "://") {
		return "", false
	}
	if i := strings.Index(upstream, ":"); i > 0 && !strings.Contains(upstream[:i], "/") && !filepath.IsAbs(upstream) {
		return "", false // scp-like: git@host:repo.git
	}
	return filepath.FromSlash(upstream), true
}

// ensureUpstream makes the bare repository a local upstream names when
// it does not exist (or is an empty directory), with the branch main
// agentos pushes, and returns what it did ("" when nothing); a path that
// exists and is not a Git repository is refused. A relative path is
// relative to the tool root dir (as agentos.json reads it). An existing
// bare repository without any branch gets its HEAD pointed at main: its
// default branch is then the one agentos pushes, and a clone checks the
// tools out (a git whose default branch is master left HEAD on a branch no
// one pushes).
func ensureUpstream(dir, upstream string, initBare func(path, branch string) error) (made string, err error) {
	p, local := LocalUpstream(upstream)
	if !local {
		return "", nil
	}
	if !filepath.IsAbs(p) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		p = filepath.Join(abs, p)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("the Git upstream %s: %w", p, err)
	case !fi.IsDir():
		return "", notRepository(upstream, p, "is a file")
	default:
		if isRepository(p) {
			return pointEmptyHead(p, pushedBranch)
		}
		if ents, err := os.ReadDir(p); err != nil || len(ents) > 0 {
			return "", notRepository(upstream, p, "is a directory with other files")
		}
	}
	if err := initBare(p, pushedBranch); err != nil {
		return "", fmt.Errorf("creating the Git upstream %s: %w", p, err)
	}
	return p + " (bare Git upstream)", nil
}

// pushedBranch is the branch a new agentos.json names (git.branch).
const pushedBranch = "main"

// errNoInitBare refuses Init with Git but no Options.InitBare.
var errNoInitBare = errors.New("scaffold: Options.InitBare is nil and Git is on: pass the function that creates a bare repository (repo.InitBare, as the composition root does), or set NoGit")

// pointEmptyHead points the HEAD of the bare repository p at branch if the
// repository has no branch at all, and says so; a working tree's
// repository, or one with any branch, is left as it is ("").
func pointEmptyHead(p, branch string) (string, error) {
	if _, err := os.Stat(filepath.Join(p, "HEAD")); err != nil {
		return "", nil // not bare
	}
	r, err := git.PlainOpen(p)
	if err != nil {
		return "", fmt.Errorf("the Git upstream %s: %w", p, err)
	}
	want := plumbing.NewBranchReferenceName(branch)
	if head, err := r.Storer.Reference(plumbing.HEAD); err == nil && head.Type() == plumbing.SymbolicReference && head.Target() == want {
		return "", nil
	}
	branches, err := r.Branches()
	if err != nil {
		return "", fmt.Errorf("the Git upstream %s: %w", p, err)
	}
	defer branches.Close()
	if _, err := branches.Next(); err == nil {
		return "", nil // it has branches: its HEAD is its owner's choice
	}
	if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, want)); err != nil {
		return "", fmt.Errorf("pointing the HEAD of the Git upstream %s at %s: %w", p, branch, err)
	}
	return fmt.Sprintf("the HEAD of %s, pointing at %s, the branch agentos pushes (the repository had no branch yet)", p, branch), nil
}

// isRepository reports whether p is a bare repository or a working tree's.
func isRepository(p string) bool {
	for _, f := range []string{"HEAD", filepath.Join(".git", "HEAD")} {
		if _, err := os.Stat(filepath.Join(p, f)); err == nil {
			return true
		}
	}
	return false
}

func notRepository(upstream, p, what string) error {
	return fmt.Errorf("the Git upstream %q (%s) exists but is not a Git repository (it %s): pass a bare repository ('git init --bare'), a path that does not exist yet (agentos init creates a bare repository there), or a URL", upstream, p, what)
}

// createNew writes content to a new file at p (mode 0600); an existing
// file is left alone (false).
func createNew(p, content string) (bool, error) {
	file, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %s: %w", p, err)
	}
	_, werr := file.WriteString(content)
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, fmt.Errorf("writing %s: %w", p, werr)
	}
	return true, nil
}

// configFile is what Init writes: every default spelled out, so a user
// sees what can be changed; upstream "" leaves Git out.
func configFile(upstream string) string {
	git := ""
	if upstream != "" {
		u, _ := json.Marshal(upstream)
		git = fmt.Sprintf(`,
  "git": {
    "upstream": %s,
    "branch": "main",
    "strategy": "direct"
  }`, u)
	}
	return `{
  "tools_dir": "tools",
  "isolation": "process",
  "allowed_imports": [],
  "write_dirs": [],
  "limits": {
    "timeout": "5s",
    "memory_mb": 256,
    "max_call_depth": 1000,
    "max_output_bytes": 1048576
  }` + git + `
}
`
}
