package repo_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// TestOwnCommitsKeepFilesAndTree: after each of our own commits (a new
// file, an overwrite, a deletion, a file replaced by a directory and back,
// a commit on top of another writer's) the repo's file map is its tree's,
// and the upstream holds exactly the working tree's files. A tracked file
// under a directory that is now a file is gone, not unreadable ("not a
// directory" to lstat).
func TestOwnCommitsKeepFilesAndTree(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	plainCommit(t, up, "main", map[string]string{"tools/seed.ts": "seed", "tools/dir/in.ts": "in"}, "seed")
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	rm := func(p string) { must(t, os.RemoveAll(filepath.Join(dir, filepath.FromSlash(p)))) }
	want := map[string]string{"tools/seed.ts": "seed", "tools/dir/in.ts": "in"}
	steps := []struct {
		name  string
		do    func()
		paths []string
	}{
		{"a new file", func() { writeFile(t, dir, "tools/a.ts", "a1"); want["tools/a.ts"] = "a1" }, []string{"tools/a.ts"}},
		{"an overwrite", func() { writeFile(t, dir, "tools/a.ts", "a2"); want["tools/a.ts"] = "a2" }, []string{"tools/a.ts"}},
		{"a deletion", func() { rm("tools/seed.ts"); delete(want, "tools/seed.ts") }, []string{"tools/seed.ts"}},
		{"a file replaced by a directory", func() {
			rm("tools/a.ts")
			writeFile(t, dir, "tools/a.ts/b.ts", "b")
			delete(want, "tools/a.ts")
			want["tools/a.ts/b.ts"] = "b"
		}, []string{"tools/a.ts", "tools/a.ts/b.ts"}},
		{"a directory replaced by a file", func() {
			rm("tools/dir")
			writeFile(t, dir, "tools/dir", "now a file")
			delete(want, "tools/dir/in.ts")
			want["tools/dir"] = "now a file"
		}, []string{"tools/dir/in.ts", "tools/dir"}},
		{"on top of another writer's commit", func() {
			plainCommit(t, up, "main", map[string]string{"tools/theirs.ts": "t"}, "theirs")
			want["tools/theirs.ts"] = "t"
			writeFile(t, dir, "tools/c.ts", "c")
			want["tools/c.ts"] = "c"
		}, []string{"tools/c.ts"}},
	}
	for _, s := range steps {
		s.do()
		if _, err := r.Persist(ctx, s.paths, s.name); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := r.FilesAreTheTree(); err != nil {
			t.Fatalf("after %s: %v", s.name, err)
		}
		if got := upstreamFiles(t, up, "main"); !maps.Equal(got, want) {
			t.Fatalf("after %s: the upstream holds %v, want %v", s.name, got, want)
		}
	}
}
