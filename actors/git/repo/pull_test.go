package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// Two tool roots on one upstream: what one persists, the other's Pull
// brings, listing the changed paths, while a write it has not persisted
// yet stays; Contains follows.
func TestPullBringsAnotherRootsCommits(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a, b := hydrate(t, dirA, up), hydrate(t, dirB, up)
	start, _ := b.Head()

	writeFile(t, dirA, "tools/x.ts", "export default () => 1;\n")
	p1, err := a.Persist(ctx, []string{"tools/x.ts"}, "write x")
	must(t, err)
	writeFile(t, dirA, "tools/y.ts", "export default () => 2;\n")
	p2, err := a.Persist(ctx, []string{"tools/y.ts"}, "write y")
	must(t, err)

	for _, c := range []string{p1.Commit, p2.Commit} {
		if ok, err := b.Contains(c); ok || err != nil {
			t.Fatalf("B includes %s before pulling: %v %v", c, ok, err)
		}
	}
	if ok, err := b.Contains(start); !ok || err != nil {
		t.Fatalf("B does not include its own head: %v %v", ok, err)
	}
	writeFile(t, dirB, "tools/mine.ts", "export default () => 3;\n") // not persisted yet

	got, err := b.Pull(ctx)
	must(t, err)
	if got.From != start || got.Head != p2.Commit || strings.Join(got.Changed, ",") != "tools/x.ts,tools/y.ts" || len(got.Deleted) != 0 || got.Published != "" {
		t.Fatalf("Pull = %+v; want from %s to %s changing tools/x.ts and tools/y.ts", got, start, p2.Commit)
	}
	if readFile(t, dirB, "tools/y.ts") != "export default () => 2;\n" || readFile(t, dirB, "tools/mine.ts") != "export default () => 3;\n" {
		t.Fatal("the pulled file is missing, or the unpersisted write was lost")
	}
	for _, c := range []string{start, p1.Commit, p2.Commit, strings.ToUpper(p1.Commit)} {
		if ok, err := b.Contains(c); !ok || err != nil {
			t.Fatalf("after the pull, B does not include %s: %v %v", c, ok, err)
		}
	}
	if again, err := b.Pull(ctx); err != nil || again.Head != p2.Commit || len(again.Changed)+len(again.Deleted) != 0 {
		t.Fatalf("a second pull: %+v %v; want no change", again, err)
	}

	// A commit of B's that A has not pulled; a hash nobody has; not a hash.
	pb, err := b.Persist(ctx, []string{"tools/mine.ts"}, "write mine")
	must(t, err)
	if ok, _ := a.Contains(pb.Commit); ok {
		t.Fatal("A includes B's commit before pulling")
	}
	if ok, err := a.Contains(strings.Repeat("ab", 20)); ok || err != nil {
		t.Fatalf("unknown commit: %v %v", ok, err)
	}
	for _, bad := range []string{"", "HEAD", "abc", strings.Repeat("z", 40)} {
		if _, err := a.Contains(bad); !errors.Is(err, repo.ErrPath) {
			t.Fatalf("Contains(%q): %v, want ErrPath", bad, err)
		}
	}
	got, err = a.Pull(ctx)
	must(t, err)
	if got.Head != pb.Commit || strings.Join(got.Changed, ",") != "tools/mine.ts" {
		t.Fatalf("A's pull: %+v", got)
	}
	if b.Branch() != "main" {
		t.Fatalf("Branch = %q", b.Branch())
	}
	must(t, a.Close())
	if _, err := a.Pull(ctx); !errors.Is(err, repo.ErrClosed) {
		t.Fatalf("Pull after Close: %v", err)
	}
	if _, err := a.Contains(pb.Commit); !errors.Is(err, repo.ErrClosed) {
		t.Fatalf("Contains after Close: %v", err)
	}
}

// A commit left unpushed (the upstream was away) is pushed by the next
// Pull, which says so (Published), so that the caller can announce it.
func TestPullPublishesCommitsLeftUnpushed(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "a")
	a := hydrate(t, dir, up)
	away := up + ".away"
	must(t, os.Rename(up, away))
	writeFile(t, dir, "tools/x.ts", "export default () => 1;\n")
	if _, err := a.Persist(ctx, []string{"tools/x.ts"}, "write x"); !errors.Is(err, repo.ErrUpstream) {
		t.Fatalf("persist with the upstream away: %v, want ErrUpstream", err)
	}
	if _, err := a.Pull(ctx); !errors.Is(err, repo.ErrUpstream) {
		t.Fatalf("pull with the upstream away: %v, want ErrUpstream", err)
	}
	must(t, os.Rename(away, up))
	got, err := a.Pull(ctx)
	must(t, err)
	if got.Published == "" || got.Published != got.Head || upstreamCommit(t, up, "main").Hash.String() != got.Published {
		t.Fatalf("Pull = %+v; want the left-unpushed commit published and reported", got)
	}
}
