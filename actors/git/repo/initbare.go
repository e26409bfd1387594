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
	if _, err := os.Stat(filepath.Join(abs, "HEAD")); err == nil {
		if _, ok := readLooseRef(abs, ref); ok {
			return nil
		}
		sto := openStorage(abs)
		defer sto.Close()
		if r, err := sto.Reference(ref); err == nil && r.Type() == plumbing.HashReference {
			return nil
		}
		return fmt.Errorf("%w: InitBare: %s is a repository without branch %s", fs.ErrExist, abs, branch)
	}
	if ents, err := os.ReadDir(abs); err == nil && len(ents) > 0 {
		return fmt.Errorf("%w: InitBare: %s exists and is not empty; choose another path", fs.ErrExist, abs)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("repo: InitBare %s: %w", abs, err)
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
	cfg := config.NewConfig()
	cfg.Core.IsBare = true
	if err := func() error {
		for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
			if err := os.MkdirAll(filepath.Join(tmp, filepath.FromSlash(d)), 0o755); err != nil {
				return err
			}
		}
		if err := writeConfig(tmp, cfg); err != nil {
			return err
		}
		if err := writeSymRef(tmp, plumbing.HEAD, ref); err != nil {
			return err
		}
		sto := openStorage(tmp)
		defer sto.Close()
		tree, err := writeTree(sto, nil)
		if err != nil {
			return err
		}
		sig := object.Signature{Name: "agentos", Email: "agentos@localhost", When: time.Now()}
		c := &object.Commit{Author: sig, Committer: sig, Message: "agentos: initial commit\n", TreeHash: tree}
		o := sto.NewEncodedObject()
		if err := c.Encode(o); err != nil {
			return err
		}
		h, err := sto.SetEncodedObject(o)
		if err != nil {
			return err
		}
		if err := writeRef(tmp, ref, h); err != nil {
			return err
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err // an empty directory is replaced
		}
		return os.Rename(tmp, abs)
	}(); err != nil {
		return fmt.Errorf("repo: InitBare %s: %w", abs, err)
	}
	return nil
}
