package executor

import (
	"testing"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// A run made again from the journal (Request.Replayed) requires /mcp
// modules from their names alone: no mount (no server configured at all)
// is needed, the names are checked, and a caller's mcp right still
// applies. A live run without the mount cannot.
func TestMCPRequireOfAReplayedRun(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newExec(t, mode, map[string]string{
				"tools/uses_add.ts": `import add from "/mcp/tracker/add";
export default async function (): Promise<string> { return typeof add; }`,
				"tools/bad_name.ts": `import x from "/mcp/tracker/a$b";
export default async function (): Promise<string> { return typeof x; }`,
			})
			r := e.Exec(t.Context(), Request{Path: "tools/uses_add.ts", Replayed: true})
			wantResult(t, r, `"function"`)

			r = e.Exec(t.Context(), Request{Path: "tools/uses_add.ts"})
			wantKind(t, r, ErrException.Kind, "absolute module paths are refused")

			rights, _ := CallerRights(journal.Caller{Process: "p", Grants: []capability.Grant{{Right: capability.MCP, Scope: "tracker/echo"}}})
			r = e.Exec(t.Context(), Request{Path: "tools/uses_add.ts", Replayed: true, Rights: rights})
			wantKind(t, r, ErrException.Kind, "may not call tracker/add")

			rights, _ = CallerRights(journal.Caller{Process: "p", Grants: []capability.Grant{{Right: capability.MCP, Scope: "tracker/"}}})
			r = e.Exec(t.Context(), Request{Path: "tools/uses_add.ts", Replayed: true, Rights: rights})
			wantResult(t, r, `"function"`)

			r = e.Exec(t.Context(), Request{Path: "tools/bad_name.ts", Replayed: true})
			wantKind(t, r, ErrException.Kind, "cannot be a generated module")
		})
	}
}
