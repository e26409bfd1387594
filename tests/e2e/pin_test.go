package e2e_test

import (
	"context"
	"encoding/json"
	"github.com/agentos-run/agentos/actors/executor"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/kerneltools"
)

// Runs pinned to exact versions in a runtime whose tools live in Git: a run
// made through exec_tool (Runtime.Call) records the modules it required and
// the commit the tool tree was at; once the library was rewritten (a new
// commit), the tool called by version runs with the library it ran with,
// and replay gives the recorded result.
func TestRuntimeRunsArePinnedToTheirVersions(t *testing.T) {
	rt, _ := gitRoot(t, upstream(t))
	ctx := context.Background()
	write(t, rt, "tools/lib/x.ts", "/** Tags a number. */\nexport function tag(n: number): string { return 'v1:' + n; }\n")
	write(t, rt, "tools/t.ts", "/** Tags a number with the library. */\nconst x = require('/lib/lib/x');\nexport default function (args: { n: number }) { return x.tag(args.n); }\n")
	head, err := rt.Repo().Head()
	if err != nil {
		t.Fatal(err)
	}
	call := func(path string) kerneltools.ExecResult {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"path": path, "args": map[string]int{"n": 7}})
		out, err := rt.Call(ctx, "exec_tool", args)
		if err != nil {
			t.Fatalf("exec_tool %s: %v", path, err)
		}
		var r kerneltools.ExecResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := call("tools/t.ts")
	if !first.Success || string(first.Result.Result) != `"v1:7"` {
		t.Fatalf("%+v", first)
	}
	m, err := rt.Journal().Get(first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Pinned || len(m.Modules) != 1 || m.Modules[0].Path != "tools/lib/x.ts" || m.Commit != head {
		t.Fatalf("the run's record: pinned %v modules %+v commit %q (head %s)", m.Pinned, m.Modules, m.Commit, head)
	}
	write(t, rt, "tools/lib/x.ts", "/** Tags a number. */\nexport function tag(n: number): string { return 'v2:' + n; }\n")
	if now := call("tools/t.ts"); string(now.Result.Result) != `"v2:7"` {
		t.Fatalf("the current library: %+v", now)
	}
	// The entry did not change (same hash): its latest run used v2. The
	// first run's version set is what replay runs.
	rep, err := executor.Replay(ctx, rt.Executor(), rt.Journal(), first.RunID, nil)
	if err != nil || !rep.Same || string(rep.Result.Result) != `"v1:7"` {
		t.Fatalf("replay: %+v %v", rep, err)
	}
	write(t, rt, "tools/t.ts", "/** Tags a number with the library. */\nconst x = require('/lib/lib/x');\nexport default function (args: { n: number }) { return 'new ' + x.tag(args.n); }\n")
	if old := call("tools/t.ts@" + first.Hash[:10]); !old.Success || string(old.Result.Result) != `"v2:7"` || old.Hash != first.Hash {
		t.Fatalf("by version: %+v", old)
	}
	bad := call("tools/t.ts@ffffffffff")
	if bad.Success || !strings.Contains(bad.Error.Message, "tools/t.ts@"+first.Hash[:12]) {
		t.Fatalf("unknown version: %+v", bad.Error)
	}
}
