package repo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// A fresh tool root fetches the head and its tree only (depth 1): its
// .git/shallow names the head, its store verifies (deep), it persists and
// pulls like any other; asked about an older commit it never fetched, it
// fetches the history once (after a sync) and then includes it.
func TestShallowFirstCheckout(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	var old []string
	for i, name := range []string{"a", "b", "c"} {
		old = append(old, plainCommit(t, up, "main", map[string]string{"tools/" + name + ".ts": "export default () => " + string(rune('1'+i)) + ";\n"}, "write "+name).String())
	}
	dir := filepath.Join(t.TempDir(), "root")
	r := hydrate(t, dir, up)
	head, _ := r.Head()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "shallow"))
	if err != nil || strings.TrimSpace(string(b)) != head {
		t.Fatalf(".git/shallow = %q, %v; want the head %s", b, err, head)
	}
	for _, f := range []string{"tools/a.ts", "tools/b.ts", "tools/c.ts"} {
		readFile(t, dir, f)
	}
	if problems, err := repo.Verify(filepath.Join(dir, ".git"), true); err != nil || len(problems) != 0 {
		t.Fatalf("Verify(deep) of a shallow root: %v %v", problems, err)
	}
	// The commits before the head were never fetched.
	if ok, err := r.Contains(old[0]); ok || err != nil {
		t.Fatalf("Contains(first commit) before the history was fetched = %v, %v", ok, err)
	}

	// Persist, then another root's commit pulled: the boundary stays, the
	// work goes on.
	writeFile(t, dir, "tools/d.ts", "export default () => 4;\n")
	if _, err := r.Persist(ctx, []string{"tools/d.ts"}, "write d"); err != nil {
		t.Fatal(err)
	}
	otherDir := filepath.Join(t.TempDir(), "other")
	other := hydrate(t, otherDir, up, func(o *repo.Options) { o.FullHistory = true })
	if _, err := os.Stat(filepath.Join(otherDir, ".git", "shallow")); !os.IsNotExist(err) {
		t.Fatalf("FullHistory made a shallow root: %v", err)
	}
	if ok, err := other.Contains(old[0]); !ok || err != nil {
		t.Fatalf("a FullHistory root does not include the first commit: %v %v", ok, err)
	}
	writeFile(t, otherDir, "tools/e.ts", "export default () => 5;\n")
	if _, err := other.Persist(ctx, []string{"tools/e.ts"}, "write e"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	readFile(t, dir, "tools/e.ts")
	// Still missing after a sync: the next Pull fetches the history.
	if ok, _ := r.Contains(old[0]); ok {
		t.Fatal("Contains(first commit) true before the history was fetched")
	}
	if _, err := r.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range old {
		if ok, err := r.Contains(c); !ok || err != nil {
			t.Fatalf("after the history was fetched, Contains(%s) = %v, %v", c, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "shallow")); !os.IsNotExist(err) {
		t.Fatalf(".git/shallow after a full fetch: %v", err)
	}
	if problems, err := repo.Verify(filepath.Join(dir, ".git"), true); err != nil || len(problems) != 0 {
		t.Fatalf("Verify(deep) after the full fetch: %v %v", problems, err)
	}
}
