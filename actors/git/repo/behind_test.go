package repo_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestBehind: a tool root never checked out is behind; after Hydrate it is
// current; another writer's push makes it behind; an unreachable upstream
// is ErrUpstream. Behind writes nothing.
func TestBehind(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	opts := repo.Options{Dir: dir, Upstream: up}
	if b, err := repo.Behind(ctx, opts); err != nil || !b {
		t.Fatalf("a tool root never checked out: behind=%v %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Behind wrote into the tool root: %v", ents)
	}
	r := hydrate(t, dir, up)
	if b, err := repo.Behind(ctx, opts); err != nil || b {
		t.Fatalf("after Hydrate: behind=%v %v", b, err)
	}
	// Our own write, pushed: still current.
	writeFile(t, dir, "tools/a.ts", "a")
	_, err := r.Persist(ctx, []string{"tools/a.ts"}, "a")
	must(t, err)
	if b, err := repo.Behind(ctx, opts); err != nil || b {
		t.Fatalf("after our own push: behind=%v %v", b, err)
	}
	plainCommit(t, up, "main", map[string]string{"tools/b.ts": "b"}, "b")
	if b, err := repo.Behind(ctx, opts); err != nil || !b {
		t.Fatalf("after another writer's push: behind=%v %v", b, err)
	}
	must(t, os.Rename(up, up+".away"))
	if _, err := repo.Behind(ctx, opts); !errors.Is(err, repo.ErrUpstream) {
		t.Fatalf("unreachable upstream: %v, want ErrUpstream", err)
	}
}

// BenchmarkBehindNoop is the cost of the check every exec and check makes
// on a current tool root: one reference advertisement from a local bare
// upstream with some history.
func BenchmarkBehindNoop(b *testing.B) {
	up := newUpstream(b)
	dir := b.TempDir()
	r := hydrate(b, dir, up)
	for i := range 20 {
		p := fmt.Sprintf("tools/t%d.ts", i)
		writeFile(b, dir, p, p)
		if _, err := r.Persist(ctx, []string{p}, p); err != nil {
			b.Fatal(err)
		}
	}
	opts := repo.Options{Dir: dir, Upstream: up}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		behind, err := repo.Behind(ctx, opts)
		if err != nil || behind {
			b.Fatal(behind, err)
		}
	}
}
