package repo_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// Issue 25 item 7: file names from the upstream with control characters,
// bidirectional overrides or over 255 bytes, and files over the configured
// size, were checked out as they came (a name with "\u202e" shows as
// another name; one with a newline forges log lines). They are refused at
// checkout, logged and listed, and the update's other files are checked
// out; a later write does not bring them back.
func TestUpstreamHostileNamesRefused(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			up := newUpstream(t)
			dir := t.TempDir()
			var logs syncBuffer
			opt := func(o *repo.Options) { o.Logger = newLogger(&logs); o.MaxFileBytes = 1 << 10 }
			if !fresh {
				r := hydrate(t, dir, up, opt)
				must(t, r.Close())
			}
			hostile := map[string]string{
				"tools/evil\u202ests.js":                    "bidirectional",
				"tools/iso\u2066late.ts":                    "bidirectional",
				"tools/new\nline.ts":                        "control character",
				"tools/esc\x1b[31m.ts":                      "control character",
				"tools/c1\u0085.ts":                         "control character",
				"tools/" + strings.Repeat("a", 256) + ".ts": "255",
				"tools/big.ts":                              "git.max_file_bytes",
			}
			var ents []rawEntry
			for p := range hostile {
				content := "export default () => 'x'"
				if p == "tools/big.ts" {
					content = strings.Repeat("/", 2<<10)
				}
				ents = append(ents, rawEntry{p, filemode.Regular, content})
			}
			ents = append(ents, rawEntry{"tools/ok.ts", filemode.Regular, "export default () => 'ok'"},
				rawEntry{"tools/" + strings.Repeat("b", 250) + ".ts", filemode.Regular, "fine"})
			rawCommit(t, up, "main", ents, "hostile names")
			r := hydrate(t, dir, up, opt)
			if readFile(t, dir, "tools/ok.ts") != "export default () => 'ok'" || readFile(t, dir, "tools/"+strings.Repeat("b", 250)+".ts") != "fine" {
				t.Fatal("the legitimate files of the update were not checked out")
			}
			got := map[string]string{}
			for _, rf := range r.Refused() {
				got[rf.Path] = rf.Reason
			}
			for p, why := range hostile {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%q exists in the tool root: it must be refused", p)
				}
				if !strings.Contains(got[p], why) {
					t.Errorf("Refused()[%q] = %q, want a reason with %q", p, got[p], why)
				}
			}
			if !strings.Contains(logs.String(), "refused an entry") || !strings.Contains(logs.String(), "bidirectional") {
				t.Errorf("the log does not report the refusals:\n%s", logs.String())
			}
			writeFile(t, dir, "tools/mine.ts", "mine")
			_, err := r.Persist(ctx, []string{"tools/mine.ts"}, "write tools/mine.ts")
			must(t, err)
			if _, err := os.Lstat(filepath.Join(dir, "tools/big.ts")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("tools/big.ts appeared after a Persist")
			}
		})
	}
}
