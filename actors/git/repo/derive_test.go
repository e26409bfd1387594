package repo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestDeriveReportsWhatACommitReads: with Derive, a Persist commits the
// Derived files Derive reported changed, and reads no other (a derived
// file changed but not reported stays out of the commit, which is what
// keeps a commit's cost independent of the number and size of the derived
// files); a file reported later is taken by the commit of that later
// Persist; a path Derive reports that is not Derived fails the Persist and
// says so.
func TestDeriveReportsWhatACommitReads(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	var report []string
	r := hydrate(t, dir, up, func(o *repo.Options) {
		o.Derived = []string{"meta/00.json", "meta/01.json"}
		o.Derive = func() ([]string, error) {
			out := report
			report = nil
			return out, nil
		}
	})
	ctx := context.Background()
	writeFile(t, dir, "tools/a.ts", "export default 1")
	writeFile(t, dir, "meta/00.json", `{"a":1}`)
	writeFile(t, dir, "meta/01.json", `{"b":1}`) // changed, not reported
	report = []string{"meta/00.json"}
	if _, err := r.Persist(ctx, []string{"tools/a.ts"}, "write a"); err != nil {
		t.Fatal(err)
	}
	files := upstreamFiles(t, up, "main")
	if files["meta/00.json"] != `{"a":1}` || files["tools/a.ts"] != "export default 1" {
		t.Fatalf("upstream after the write: %v", files)
	}
	if _, ok := files["meta/01.json"]; ok {
		t.Fatal("a derived file Derive did not report was read and committed")
	}
	// Reported now: the next commit takes it.
	report = []string{"meta/01.json"}
	writeFile(t, dir, "tools/b.ts", "export default 2")
	if _, err := r.Persist(ctx, []string{"tools/b.ts"}, "write b"); err != nil {
		t.Fatal(err)
	}
	if files := upstreamFiles(t, up, "main"); files["meta/01.json"] != `{"b":1}` {
		t.Fatalf("upstream after the second write: %v", files)
	}
	// A path that is not Derived.
	report = []string{"tools/c.ts"}
	writeFile(t, dir, "tools/d.ts", "export default 4")
	_, err := r.Persist(ctx, []string{"tools/d.ts"}, "write d")
	if err == nil || !strings.Contains(err.Error(), "not one of the Derived files") {
		t.Fatalf("Derive reporting tools/c.ts: %v", err)
	}
	if errors.Is(err, repo.ErrConflict) {
		t.Fatal(err)
	}
}
