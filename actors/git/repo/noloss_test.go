package repo_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestRebaseKeepsUnpersistedWrite guards against this defect: a tool file written in the
// working tree but not yet persisted (another tool's Persist runs first) is
// overwritten by the rebase after a rejected push when the upstream also
// changed that path. The later Persist of that file then returns nil and
// publishes nothing: the write is lost, no conflict branch.
func TestRebaseKeepsUnpersistedWrite(t *testing.T) {
	up := newUpstream(t)
	d1 := filepath.Join(t.TempDir(), "n1")
	d2 := filepath.Join(t.TempDir(), "n2")
	r1 := hydrate(t, d1, up)
	r2 := hydrate(t, d2, up)

	writeFile(t, d1, "tools/x.ts", "node1")
	if _, err := r1.Persist(ctx, []string{"tools/x.ts"}, "n1 x"); err != nil {
		t.Fatal(err)
	}

	// Node 2: tool x written (its Persist is queued), tool y persisted first.
	writeFile(t, d2, "tools/x.ts", "node2")
	writeFile(t, d2, "tools/y.ts", "y")
	if _, err := r2.Persist(ctx, []string{"tools/y.ts"}, "n2 y"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, d2, "tools/x.ts"); got != "node2" {
		t.Errorf("unpersisted tools/x.ts in node 2's working tree = %q after Persist(y), want %q", got, "node2")
	}
	_, err := r2.Persist(ctx, []string{"tools/x.ts"}, "n2 x")
	if err == nil {
		files := upstreamFiles(t, up, "main")
		t.Errorf("Persist(x) = nil (acknowledged), upstream x = %q, branches %v: node 2's write is lost",
			files["tools/x.ts"], upstreamBranches(t, up))
	} else if !errors.Is(err, repo.ErrConflict) {
		t.Errorf("Persist(x) = %v", err)
	}
}

// TestRebaseKeepsRewriteDuringPush guards against this defect: the same tool is rewritten
// while its Persist is in flight (after the content was read, before the
// push); a concurrent writer on another node moved the branch (another
// path). The rebase writes the old content back over the rewrite, and the
// next Persist of the tool is a no-op returning nil.
func TestRebaseKeepsRewriteDuringPush(t *testing.T) {
	up := newUpstream(t)
	d1 := filepath.Join(t.TempDir(), "n1")
	d2 := filepath.Join(t.TempDir(), "n2")
	r1 := hydrate(t, d1, up)
	armed := false
	r2 := hydrate(t, d2, up, func(o *repo.Options) {
		o.Now = func() time.Time {
			// Called by writeCommit, i.e. after collect read the file:
			// simulate the tool writing its next version now.
			if armed {
				armed = false
				writeFile(t, d2, "tools/x.ts", "v3")
			}
			return time.Now()
		}
	})

	writeFile(t, d1, "tools/other.ts", "other")
	if _, err := r1.Persist(ctx, []string{"tools/other.ts"}, "n1 other"); err != nil {
		t.Fatal(err)
	}

	writeFile(t, d2, "tools/x.ts", "v2")
	armed = true
	if _, err := r2.Persist(ctx, []string{"tools/x.ts"}, "x v2"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, d2, "tools/x.ts"); got != "v3" {
		t.Errorf("tools/x.ts = %q after the rebase, want the tool's latest write %q", got, "v3")
	}
	if _, err := r2.Persist(ctx, []string{"tools/x.ts"}, "x v3"); err != nil {
		t.Fatal(err)
	}
	if got := upstreamFiles(t, up, "main")["tools/x.ts"]; got != "v3" {
		t.Errorf("Persist(x v3) = nil but upstream x = %q: the write is lost", got)
	}
}

// TestPRHydrateKeepsUncommitted guards against this defect: in PR mode, an uncommitted change
// found by Hydrate to a path the upstream changed meanwhile is discarded
// (working file overwritten, Info log only); Direct mode pushes it to a
// conflict branch instead.
func TestPRHydrateKeepsUncommitted(t *testing.T) {
	up := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "n")
	pr := func(o *repo.Options) { o.Strategy = repo.PR }
	r, err := repo.Hydrate(ctx, repo.Options{Dir: dir, Upstream: up, Strategy: repo.PR})
	must(t, err)
	plainCommit(t, up, "main", map[string]string{"tools/x.ts": "base"}, "base")
	must(t, r.Close())
	r = hydrate(t, dir, up, pr)
	must(t, r.Close())

	writeFile(t, dir, "tools/x.ts", "local work") // never persisted (crash)
	plainCommit(t, up, "main", map[string]string{"tools/x.ts": "upstream"}, "up")
	hydrate(t, dir, up, pr)
	if got := readFile(t, dir, "tools/x.ts"); got != "local work" {
		t.Errorf("Hydrate (PR) replaced the uncommitted tools/x.ts with %q; branches %v", got, upstreamBranches(t, up))
	}
}

// TestPRHydratePushesConflict guards against this defect: the uncommitted version kept by a
// PR-mode Hydrate that clashes with the upstream is also pushed to a
// conflict branch.
func TestPRHydratePushesConflict(t *testing.T) {
	up := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "n")
	pr := func(o *repo.Options) { o.Strategy = repo.PR }
	plainCommit(t, up, "main", map[string]string{"tools/x.ts": "base"}, "base")
	r := hydrate(t, dir, up, pr)
	must(t, r.Close())
	writeFile(t, dir, "tools/x.ts", "local work")
	plainCommit(t, up, "main", map[string]string{"tools/x.ts": "upstream"}, "up")
	hydrate(t, dir, up, pr)
	var found bool
	for _, b := range upstreamBranches(t, up) {
		if strings.HasPrefix(b, "conflict/x-") && upstreamFiles(t, up, b)["tools/x.ts"] == "local work" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no conflict branch holds the local version; branches %v", upstreamBranches(t, up))
	}
}

// TestPRRestartProposesOnlyItsPath guards against this defect: after a restart, the files
// of earlier (unmerged) proposals are still in the working tree; a new
// Persist proposes only its own path.
func TestPRRestartProposesOnlyItsPath(t *testing.T) {
	up := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "n")
	pr := func(o *repo.Options) { o.Strategy = repo.PR }
	r := hydrate(t, dir, up, pr)
	writeFile(t, dir, "tools/a.ts", "a")
	p1, err := r.Persist(ctx, []string{"tools/a.ts"}, "a")
	must(t, err)
	must(t, r.Close())

	r = hydrate(t, dir, up, pr)
	writeFile(t, dir, "tools/b.ts", "b")
	p2, err := r.Persist(ctx, []string{"tools/b.ts"}, "b")
	must(t, err)
	if p2.Branch == p1.Branch {
		t.Fatalf("same branch %s", p2.Branch)
	}
	files := upstreamFiles(t, up, p2.Branch)
	if files["tools/b.ts"] != "b" {
		t.Fatalf("proposal %s lacks tools/b.ts: %v", p2.Branch, files)
	}
	if _, ok := files["tools/a.ts"]; ok {
		t.Fatalf("proposal %s bundles the earlier proposal tools/a.ts: %v", p2.Branch, files)
	}
	if readFile(t, dir, "tools/a.ts") != "a" {
		t.Fatal("the working tree lost the earlier proposal")
	}
}
