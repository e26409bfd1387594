package scenario

import (
	"path/filepath"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// Upstream makes a bare repository with an initial commit on main, in a
// directory of t's.
func Upstream(t testing.TB) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "tools.git")
	if err := repo.InitBare(bare, "main"); err != nil {
		t.Fatal(err)
	}
	return bare
}

// UpstreamTree returns the files of branch in the bare repository, by path.
func UpstreamTree(t testing.TB, bare, branch string) map[string]string {
	t.Helper()
	r, err := gogit.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("branch %s: %v", branch, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	_ = files.ForEach(func(f *object.File) error {
		s, _ := f.Contents()
		out[f.Name] = s
		return nil
	})
	return out
}
