package repo_test

import (
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
)

// TestNeverRunsGitBinary puts git, git-upload-pack and git-receive-pack
// executables that leave a mark on PATH: hydrating, persisting and plain
// go-git clones and pushes (which go through the "file" transport this
// package installs) must not run any of them.
func TestNeverRunsGitBinary(t *testing.T) {
	bin := t.TempDir()
	mark := filepath.Join(t.TempDir(), "git-was-run")
	for _, name := range []string{"git", "git-upload-pack", "git-receive-pack", "git-upload-archive"} {
		script := "#!/bin/sh\necho \"$0 $*\" >> " + mark + "\nexit 1\n"
		must(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	t.Setenv("PATH", bin)

	up := newUpstream(t)
	plainCommit(t, up, "main", map[string]string{"tools/a.ts": "a"}, "a")
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	writeFile(t, dir, "tools/b.ts", "b")
	_, err := r.Persist(ctx, []string{"tools/b.ts"}, "b")
	must(t, err)
	if _, err := git.PlainClone(t.TempDir(), false, &git.CloneOptions{URL: "file://" + up}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Fatalf("the git binary was run:\n%s", b)
	}
}
