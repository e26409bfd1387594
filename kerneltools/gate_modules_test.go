package kerneltools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/kerneltools"
)

// twiceOf is how the entries below type the module they require.
const twiceOf = ` as { twice: (n: number) => number }`

// The gate finds a tool's modules on its syntax tree, never by a pattern
// over its text: a comment inside a require or an import hides nothing.
// Each entry is low risk on its own and requires tools/lib/risky.ts (high):
// each run waits for an approval that names the module.
func TestGateFindsModulesThroughComments(t *testing.T) {
	n, g, p := bootGated(t)
	writeTool(t, n, "tools/lib/risky.ts", riskyLib)
	body := "\n/** Doubles a number through a helper. */\nexport default function entry(args: { n: number }): number {\n  return lib.twice(args.n);\n}\n"
	entries := map[string]string{
		"tools/comment_in_require.ts":    `const lib = require(/* c */ "./lib/risky")` + twiceOf + ";\n" + body,
		"tools/comment_after_require.ts": `const lib = require/**/("./lib/risky")` + twiceOf + ";\n" + body,
		"tools/comment_in_import.ts":     `import * as lib from /* reviewed */ "./lib/risky";` + "\n" + body,
	}
	for path, src := range entries {
		t.Run(path, func(t *testing.T) {
			writeTool(t, n, path, src)
			res := execRes(t, n, p, `{"path":"`+path+`","args":{"n":21}}`)
			if res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeTimeout {
				t.Fatalf("an entry hiding its high-risk module behind a comment ran without approval: %+v", res)
			}
			rs := pendingOf(t, g, path)
			if len(rs) != 1 || rs[0].Risk != "high" || len(rs[0].Modules) != 1 || !strings.HasPrefix(rs[0].Modules[0], "tools/lib/risky.ts@") {
				t.Fatalf("the request does not cover the module: %+v", rs)
			}
		})
	}
}

// A require the syntax tree cannot resolve (a computed path, require
// aliased) is judged when the module loads: with the entry approved, the
// high-risk module it reaches at run time is refused (approval_required)
// and its own request recorded; approving that module lets the run go.
func TestGateJudgesModulesAtLoad(t *testing.T) {
	body := "\n/** Doubles a number through a helper. */\nexport default function entry(args: { n: number }): number {\n  return lib.twice(args.n);\n}\n"
	entries := map[string]string{
		"tools/computed.ts": `const name = "./lib/" + "risky";` + "\nconst lib = require(name)" + twiceOf + ";\n" + body,
		"tools/aliased.ts":  "const r = require;\nconst lib = r(\"./lib/risky\")" + twiceOf + ";\n" + body,
	}
	for path, src := range entries {
		t.Run(path, func(t *testing.T) {
			n, g, p := bootGated(t)
			writeTool(t, n, "tools/lib/risky.ts", riskyLib)
			writeTool(t, n, path, src)
			args := `{"path":"` + path + `","args":{"n":21}}`
			res := execRes(t, n, p, args)
			if res.Success {
				t.Fatalf("an entry reaching a high-risk module by a require the tree cannot resolve ran without approval: %+v", res)
			}
			// The entry itself is rated high (its require is not a
			// literal): the operator approves the entry...
			rs := pendingOf(t, g, path)
			if len(rs) != 1 || rs[0].Risk != "high" {
				t.Fatalf("the entry's request: %+v (run %+v)", rs, res)
			}
			if _, err := g.Decide(rs[0].ID, true, "test", ""); err != nil {
				t.Fatal(err)
			}
			// ... which does not approve the module it loads at run time.
			res = execRes(t, n, p, args)
			if res.Success || res.Error == nil || !strings.Contains(res.Error.Message, approval.CodeRequired) && string(res.Error.Kind) != approval.CodeRequired {
				t.Fatalf("the high-risk module loaded at run time ran unapproved: %+v", res)
			}
			if !strings.Contains(res.Error.Message, "tools/lib/risky.ts") || !strings.Contains(res.Error.Message, "agentos approve") {
				t.Errorf("the refusal does not say which module or how to approve it: %s", res.Error.Message)
			}
			mods := pendingOf(t, g, "tools/lib/risky.ts")
			if len(mods) != 1 || mods[0].Risk != "high" {
				t.Fatalf("the module's own request: %+v", mods)
			}
			if _, err := g.Decide(mods[0].ID, true, "test", ""); err != nil {
				t.Fatal(err)
			}
			res = execRes(t, n, p, args)
			if !res.Success || string(res.Result.Result) != "42" {
				t.Fatalf("the run with the module approved: %+v", res)
			}
		})
	}
}

// A module rewritten between the gate's judgment and the run's require is
// judged as it loads: the judged version of a low-risk module does not
// carry a high-risk rewrite.
func TestGateJudgesModuleChangedAfterJudgment(t *testing.T) {
	n, _, p := bootGated(t)
	writeTool(t, n, "tools/lib/risky.ts", strings.Replace(riskyLib, " @ignore-security", "", 1))
	writeTool(t, n, "tools/entry.ts", lowEntry)
	kerneltools.SetAfterGate(func(string) { writeTool(t, n, "tools/lib/risky.ts", riskyLib) })
	defer kerneltools.SetAfterGate(nil)
	res := execRes(t, n, p, `{"path":"tools/entry.ts","args":{"n":21}}`)
	if res.Success || res.Error == nil || !strings.Contains(res.Error.Message, "tools/lib/risky.ts") {
		t.Fatalf("a module rewritten high-risk after the judgment ran unjudged: %+v", res)
	}
}

// check_tool rates an entry by the modules it requires too: a low-risk
// entry requiring a high-risk module (behind a comment) is high, the
// module's reason named with its path.
func TestCheckToolRatesModules(t *testing.T) {
	n, _, p := bootGated(t)
	writeTool(t, n, "tools/lib/risky.ts", riskyLib)
	writeTool(t, n, "tools/entry.ts", strings.Replace(lowEntry, `from "./lib/risky"`, `from /* reviewed */ "./lib/risky"`, 1))
	var res check.Result
	if err := json.Unmarshal(mustCall(t, n, p, "check_tool", `{"path":"tools/entry.ts"}`), &res); err != nil {
		t.Fatal(err)
	}
	if res.Risk != check.RiskHigh || !slices.ContainsFunc(res.Risks, func(f check.RiskFinding) bool {
		return f.Module == "tools/lib/risky.ts" && f.Level == check.RiskHigh
	}) {
		t.Fatalf("check_tool of an entry requiring a high-risk module: %+v", res)
	}
}
