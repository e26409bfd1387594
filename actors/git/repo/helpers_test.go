package repo_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// newUpstream makes a bare repository with an initial commit on main.
func newUpstream(t testing.TB) string {
	t.Helper()
	up := filepath.Join(t.TempDir(), "upstream.git")
	if err := repo.InitBare(up, "main"); err != nil {
		t.Fatal(err)
	}
	return up
}

// hydrate opens a tool root on up and closes it at the end of the test.
func hydrate(t testing.TB, dir, up string, mod ...func(*repo.Options)) *repo.Repo {
	t.Helper()
	o := repo.Options{Dir: dir, Upstream: up}
	for _, f := range mod {
		f(&o)
	}
	r, err := repo.Hydrate(context.Background(), o)
	if err != nil {
		t.Fatalf("Hydrate(%s): %v", dir, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeFile(t testing.TB, dir, p, content string) {
	t.Helper()
	a := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(a), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// plainCommit commits files to up's branch with plain go-git (clone,
// commit, push), the way a human or another tool would.
func plainCommit(t testing.TB, up, branch string, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: up, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true})
	if err != nil {
		t.Fatalf("plain clone: %v", err)
	}
	w, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		writeFile(t, dir, p, c)
		if len(files) > 100 {
			continue // added at once below: go-git's Add of each reads the whole tree
		}
		if _, err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if len(files) > 100 {
		if err := w.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := w.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "human", Email: "human@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(&git.PushOptions{}); err != nil {
		t.Fatalf("plain push: %v", err)
	}
	return h
}

// upstreamCommit returns the head commit of a branch of the bare
// repository up.
func upstreamCommit(t testing.TB, up, branch string) *object.Commit {
	t.Helper()
	r, err := git.PlainOpen(up)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("branch %s of %s: %v", branch, up, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// upstreamFiles lists every file of a branch with its content.
func upstreamFiles(t testing.TB, up, branch string) map[string]string {
	t.Helper()
	c := upstreamCommit(t, up, branch)
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = tree.Files().ForEach(func(f *object.File) error {
		s, err := f.Contents()
		out[f.Name] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// upstreamBranches lists the branches of up.
func upstreamBranches(t testing.TB, up string) []string {
	t.Helper()
	r, err := git.PlainOpen(up)
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Branches()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	_ = it.ForEach(func(ref *plumbing.Reference) error {
		out = append(out, ref.Name().Short())
		return nil
	})
	sort.Strings(out)
	return out
}

// history walks a branch and fails unless it is linear; it returns the
// commits, newest first.
func history(t testing.TB, up, branch string) []*object.Commit {
	t.Helper()
	var out []*object.Commit
	c := upstreamCommit(t, up, branch)
	for {
		out = append(out, c)
		if c.NumParents() > 1 {
			t.Fatalf("commit %s is a merge: history is not linear", c.Hash)
		}
		if c.NumParents() == 0 {
			return out
		}
		p, err := c.Parent(0)
		if err != nil {
			t.Fatal(err)
		}
		c = p
	}
}

// lockFiles lists *.lock files under dir.
func lockFiles(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func plainStatus(t testing.TB, dir string) git.Status {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// commitPaths lists the paths commit c changes against its first parent,
// sorted.
func commitPaths(t testing.TB, c *object.Commit) []string {
	t.Helper()
	var parentTree *object.Tree
	if c.NumParents() > 0 {
		p, err := c.Parent(0)
		must(t, err)
		parentTree, err = p.Tree()
		must(t, err)
	}
	tree, err := c.Tree()
	must(t, err)
	changes, err := object.DiffTree(parentTree, tree)
	must(t, err)
	var out []string
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
