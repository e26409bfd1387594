package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// InitBare creates a bare repository at path whose branch (default "main")
// holds one empty commit, "agentos: initial commit", so that the first
// Hydrate of a tool root has a branch to check out. The repository is built
// in a directory next to path and renamed into place: path is either
// absent, or complete. When path already is a bare repository with that
// branch, InitBare does nothing (agentos init may run twice); any other
// existing, non-empty path is an error.
func InitBare(path string, branch string) error {
	InstallTransport()
	if branch == "" {
		branch = "main"
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("%w: branch %q is not a valid branch name", ErrOptions, branch)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("repo: InitBare %s: %w", path, err)
	}
	if done, err := initialized(abs, branch); done || err != nil {
		return err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("repo: InitBare %s: %w", abs, err)
	}
	tmp, err := os.MkdirTemp(parent, initPrefix)
	if err != nil {
		return fmt.Errorf("repo: InitBare %s: %w", abs, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := writeInitialRepo(tmp, ref); err != nil {
		return fmt.Errorf("repo: InitBare %s: %w", abs, err)
	}
	if err := renameInto(tmp, abs); err != nil {
		return fmt.Errorf("repo: InitBare %s: %w", abs, err)
	}
	return nil
}

// initialized reports whether abs already is a bare repository with
// branch (InitBare has nothing to do), and fails when abs is anything
// else but absent or an empty directory.
func initialized(abs, branch string) (bool, error) {
	ref := plumbing.NewBranchReferenceName(branch)
	if _, err := os.Stat(filepath.Join(abs, "HEAD")); err == nil {
		if _, ok := readLooseRef(abs, ref); ok {
			return true, nil
		}
		sto := openStorage(abs)
		defer sto.Close()
		if r, err := sto.Reference(ref); err == nil && r.Type() == plumbing.HashReference {
			return true, nil
		}
		return false, fmt.Errorf("%w: InitBare: %s is a repository without branch %s", fs.ErrExist, abs, branch)
	}
	ents, err := os.ReadDir(abs)
	switch {
	case err == nil && len(ents) > 0:
		return false, fmt.Errorf("%w: InitBare: %s exists and is not empty; choose another path", fs.ErrExist, abs)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("repo: InitBare %s: %w", abs, err)
	}
	return false, nil
}

// writeInitialRepo writes, in the empty directory dir, a bare repository
// whose HEAD is the branch ref, holding the initial commit.
func writeInitialRepo(dir string, ref plumbing.ReferenceName) error {
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	cfg := config.NewConfig()
	cfg.Core.IsBare = true
	if err := writeConfig(dir, cfg); err != nil {
		return err
	}
	if err := writeSymRef(dir, plumbing.HEAD, ref); err != nil {
		return err
	}
	h, err := writeInitialCommit(dir)
	if err != nil {
		return err
	}
	return writeRef(dir, ref, h)
}

// writeInitialCommit stores, in the repository at dir, the empty commit
// "agentos: initial commit".
func writeInitialCommit(dir string) (plumbing.Hash, error) {
	sto := openStorage(dir)
	defer sto.Close()
	tree, err := writeTree(sto, nil)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "agentos", Email: "agentos@localhost", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "agentos: initial commit\n", TreeHash: tree}
	o := sto.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return sto.SetEncodedObject(o)
}

// renameInto moves the built repository tmp to abs, replacing abs when it
// is an empty directory.
func renameInto(tmp, abs string) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // an empty directory is replaced
	}
	return os.Rename(tmp, abs)
}
