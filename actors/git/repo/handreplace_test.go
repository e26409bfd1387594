package repo_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestLaterBootKeepsAHandReplacement: a tracked directory replaced by a
// file, or a tracked file replaced by a directory, by hand while the node
// was stopped, is kept by the next start (which failed with "not a
// directory" or "directory not empty" restoring the tracked file through
// it). The tracked file's deletion and what replaced it are pending local
// changes, committed by the next write of those paths, as any hand change.
func TestLaterBootKeepsAHandReplacement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tracked string // the tracked file
		removed string // what is removed by hand: it, or its directory
		by      string // the file written in its place
	}{
		{"a directory by a file", "tools/dir/in.ts", "tools/dir", "tools/dir"},
		{"a file by a directory", "tools/a.ts", "tools/a.ts", "tools/a.ts/b.ts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			seed := map[string]string{"tools/seed.ts": "seed", tc.tracked: "tracked"}
			plainCommit(t, up, "main", seed, "seed")
			dir := t.TempDir()
			must(t, hydrate(t, dir, up).Close())
			must(t, os.RemoveAll(filepath.Join(dir, filepath.FromSlash(tc.removed))))
			writeFile(t, dir, tc.by, "by hand")

			var logs syncBuffer
			r := hydrate(t, dir, up, func(o *repo.Options) { o.Logger = newLogger(&logs) })
			if got := readFile(t, dir, tc.by); got != "by hand" {
				t.Fatalf("the start did not keep %s: %q", tc.by, got)
			}
			if !strings.Contains(logs.String(), "path="+tc.tracked) {
				t.Errorf("the replaced %s was not found as a local change:\n%s", tc.tracked, logs.String())
			}
			if got := upstreamFiles(t, up, "main"); !maps.Equal(got, seed) {
				t.Errorf("the start committed %v, though no agentos write was under way", got)
			}
			must(t, r.FilesAreTheTree())
			if _, err := r.Persist(context.Background(), []string{tc.tracked, tc.by}, "replace"); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"tools/seed.ts": "seed", tc.by: "by hand"}
			if got := upstreamFiles(t, up, "main"); !maps.Equal(got, want) {
				t.Errorf("after the write the upstream holds %v, want %v", got, want)
			}
			must(t, r.Close())
			must(t, hydrate(t, dir, up).Close())
		})
	}
}
