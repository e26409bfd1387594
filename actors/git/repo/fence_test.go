package repo_test

import (
	"errors"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// Issue 24: a forge's commit carries its run and fencing token
// (repo.FenceTrailer). A commit of a holder whose token is stale (another
// node claimed the run since, with a greater token, and pushed the tool)
// never reaches the upstream, neither when the stale holder pushes after
// the newer one without having seen it (its push is rejected and rebased)
// nor when it already pulled the newer one; the stale holder is told
// ErrFenced and its working tree takes the upstream's version.
func TestStaleFencedCommitNeverReachesUpstream(t *testing.T) {
	for _, pulled := range []bool{false, true} {
		name := "unseen"
		if pulled {
			name = "pulled"
		}
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t)
			a, b := t.TempDir(), t.TempDir()
			stale, fresh := hydrate(t, a, up), hydrate(t, b, up)

			// The run's new holder (fence 2) commits and pushes its tool.
			writeFile(t, b, "tools/x.ts", "export default () => 'new holder'")
			_, err := fresh.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts"+repo.FenceTrailer("run-1", 2))
			must(t, err)
			before := len(history(t, up, "main"))
			if pulled {
				if _, err := stale.Pull(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// The paused holder (fence 1) wakes and commits its own.
			writeFile(t, a, "tools/x.ts", "export default () => 'stale holder'")
			_, err = stale.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts"+repo.FenceTrailer("run-1", 1))
			if !errors.Is(err, repo.ErrFenced) {
				t.Fatalf("the stale holder's Persist: %v, want ErrFenced", err)
			}
			if got := upstreamFiles(t, up, "main")["tools/x.ts"]; got != "export default () => 'new holder'" {
				t.Fatalf("upstream main holds %q, want the new holder's tool", got)
			}
			if n := len(history(t, up, "main")); n != before {
				t.Fatalf("upstream main has %d commits, want %d: the stale holder's commit landed", n, before)
			}
			if bs := upstreamBranches(t, up); len(bs) != 1 {
				t.Fatalf("upstream branches %v: the stale commit went to a branch", bs)
			}
			if got := readFile(t, a, "tools/x.ts"); got != "export default () => 'new holder'" {
				t.Fatalf("the stale holder's working tree = %q, want the upstream's version", got)
			}
			// Its next (unfenced) write goes through.
			writeFile(t, a, "tools/y.ts", "y")
			_, err = stale.Persist(ctx, []string{"tools/y.ts"}, "write tools/y.ts")
			must(t, err)
		})
	}
}

// A holder with the greater token commits over an older holder's commit
// of the same run (the older one pushed before it was fenced).
func TestNewerFenceCommitsOverOlder(t *testing.T) {
	up := newUpstream(t)
	a, b := t.TempDir(), t.TempDir()
	older, newer := hydrate(t, a, up), hydrate(t, b, up)
	writeFile(t, a, "tools/x.ts", "export default () => 1")
	_, err := older.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts"+repo.FenceTrailer("run-1", 1))
	must(t, err)
	if _, err := newer.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, b, "tools/x.ts", "export default () => 2")
	_, err = newer.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts"+repo.FenceTrailer("run-1", 2))
	must(t, err)
	if got := upstreamFiles(t, up, "main")["tools/x.ts"]; got != "export default () => 2" {
		t.Fatalf("upstream main holds %q", got)
	}
}
