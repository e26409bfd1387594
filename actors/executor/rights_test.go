package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/vfs"
)

// prefixRights grant read on path prefixes and count the checks.
type prefixRights struct {
	read  []string
	asked []string
}

func (r *prefixRights) Covers(a vfs.Access, p string) bool {
	if a != vfs.AccessRead {
		return false
	}
	for _, s := range r.read {
		if strings.HasPrefix(p, s) {
			return true
		}
	}
	return false
}

func (r *prefixRights) Allow(a vfs.Access, p string) error {
	r.asked = append(r.asked, string(a)+" "+p)
	if r.Covers(a, p) {
		return nil
	}
	return fmt.Errorf("lacks the %q right on %q", a, p)
}

// require is checked like a read, on where the module resolves: a
// link out of the tools directory, into .agentos, or to a module the caller
// may not read is refused before any of its code runs (issue 10 items 3, 4).
func TestRequireChecksLinksAndCallerRights(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/pub/helper.ts":   "export default () => 'helper ok';\n",
			"tools/pub/sib.ts":      "import h from './helper';\nexport default () => h();\n",
			"tools/pub/viapriv.ts":  "import s from '../priv/secret';\nexport default () => s();\n",
			"tools/pub/vialink.ts":  "import s from './sneaky';\nexport default () => s();\n",
			"tools/pub/viaout.ts":   "import s from './outside';\nexport default () => s();\n",
			"tools/pub/viastate.ts": "import s from './state/x';\nexport default () => s();\n",
			"tools/pub/alias.ts":    "import h from './h2';\nexport default () => h();\n",
			"tools/priv/secret.ts":  "export default () => 'PRIV-RAN';\n",
			"data/outside.ts":       "export default () => 'OUTSIDE-RAN';\n",
			".agentos/x.ts":         "export default () => 'STATE-RAN';\n",
		})
		root := e.Options().Root
		for link, target := range map[string]string{
			"tools/pub/sneaky.ts":  "../priv/secret.ts",
			"tools/pub/outside.ts": "../../data/outside.ts",
			"tools/pub/state":      "../../.agentos",
			"tools/pub/h2.ts":      "helper.ts",
		} {
			if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
		}
		rights := &prefixRights{read: []string{"tools/pub/"}}
		exec := func(tool string) execclient.Result {
			return e.Exec(context.Background(), Request{Path: tool, Args: json.RawMessage(`{}`), Rights: rights})
		}
		wantResult(t, exec("tools/pub/sib.ts"), `"helper ok"`)
		wantResult(t, exec("tools/pub/alias.ts"), `"helper ok"`) // an in-scope link is followed
		for tool, want := range map[string]string{
			"tools/pub/viapriv.ts":  `caller may not read tools/priv/secret.ts`,
			"tools/pub/vialink.ts":  `caller may not read tools/priv/secret.ts`,
			"tools/pub/viaout.ts":   `resolves (through a symbolic link) to data/outside.ts, outside the tools directory`,
			"tools/pub/viastate.ts": `internal (Git or agentos state)`,
		} {
			r := exec(tool)
			if r.Success || r.Error == nil || r.Error.Code != "security" || !strings.Contains(r.Error.Message, want) {
				t.Errorf("%s: %s %+v; want a security error saying %q", tool, r.Result, r.Error, want)
			}
			if strings.Contains(string(r.Result), "RAN") {
				t.Errorf("%s ran code it may not: %s", tool, r.Result)
			}
		}
		// Without caller rights (the operator's own run), the sandbox's
		// own rules still hold for links.
		wantResult(t, run(t, e, "tools/pub/vialink.ts", `{}`), `"PRIV-RAN"`)
		for _, tool := range []string{"tools/pub/viaout.ts", "tools/pub/viastate.ts"} {
			if r := run(t, e, tool, `{}`); r.Success || r.Error.Code != "security" {
				t.Errorf("%s without caller rights: %s %+v", tool, r.Result, r.Error)
			}
		}
	})
}
