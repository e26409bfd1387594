package check

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/transpile"
)

// at names an expected finding: rule at line:col (col 0 = any column).
type at struct {
	rule      string
	line, col int
}

func (w at) String() string { return fmt.Sprintf("%d:%d %s", w.line, w.col, w.rule) }

func has(fs []Finding, w at) bool {
	for _, f := range fs {
		if f.Rule == w.rule && f.Line == w.line && (w.col == 0 || f.Column == w.col) {
			return true
		}
	}
	return false
}

func hasRule(fs []Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// tool wraps body in a default-exported function so that default-export
// stays quiet; body starts on line 2.
func tool(body string) string {
	return "export default function run(args: { s: string }): unknown {\n" + body + "\n}\n"
}

type checkCase struct {
	name      string
	src       string
	opts      Options
	valid     bool
	errors    []at     // each MUST be among the errors
	noRules   []string // none of these rules may appear in errors or warnings
	onlyRules []string // when set, every error MUST have one of these rules
	risk      Risk     // exact Result.Risk
	warnings  []at     // each MUST be among the warnings
}

// runCases checks each case with Check and with CheckDeferred (on a
// transpiler of its own, so that Check's compile does not answer it): both
// MUST give what the case expects.
func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkCaseWith(t, tc, New(tc.opts).Check) })
		deferred := tc.opts
		if deferred.Transpiler == nil {
			deferred.Transpiler = transpile.New(0)
		}
		t.Run(tc.name+"/deferred", func(t *testing.T) { checkCaseWith(t, tc, New(deferred).CheckDeferred) })
	}
}

func checkCaseWith(t *testing.T, tc checkCase, check func(path string, src []byte) Result) {
	t.Helper()
	r := check("tools/"+strings.ReplaceAll(tc.name, " ", "_")+".ts", []byte(tc.src))
	if r.Valid != tc.valid {
		t.Errorf("Valid = %v, want %v; errors: %v", r.Valid, tc.valid, r.Errors)
	}
	for _, w := range tc.errors {
		if !has(r.Errors, w) {
			t.Errorf("missing error %v; got %v", w, r.Errors)
		}
	}
	for _, w := range tc.warnings {
		if !has(r.Warnings, w) {
			t.Errorf("missing warning %v; got %v", w, r.Warnings)
		}
	}
	for _, rule := range tc.noRules {
		if hasRule(r.Errors, rule) || hasRule(r.Warnings, rule) {
			t.Errorf("rule %s must not fire; errors %v warnings %v", rule, r.Errors, r.Warnings)
		}
	}
	if len(tc.onlyRules) > 0 {
		for _, f := range r.Errors {
			ok := false
			for _, rule := range tc.onlyRules {
				ok = ok || f.Rule == rule
			}
			if !ok {
				t.Errorf("unexpected error %v (only %v expected)", f, tc.onlyRules)
			}
		}
	}
	if r.Risk != tc.risk {
		t.Errorf("Risk = %q, want %q; risks: %v", r.Risk, tc.risk, r.Risks)
	}
}

// TestSeedCases are the seed's validation cases, rebuilt.
func TestSeedCases(t *testing.T) {
	runCases(t, []checkCase{
		{name: "fibonacci is valid and low risk", src: fibTool, valid: true, risk: RiskLow,
			noRules: []string{ruleDefaultExport, ruleMagicNumbers}},
		{name: "process exit", src: tool("  process.exit();"), risk: RiskLow,
			errors: []at{{ruleNoProcess, 2, 3}}, onlyRules: []string{ruleNoProcess}},
		{name: "import fs", src: "import fs from 'fs';\n" + tool("  return fs;"), risk: RiskHigh,
			errors: []at{{ruleAllowedImports, 1, 16}}, onlyRules: []string{ruleAllowedImports}},
		{name: "magic number 42", src: tool("  const x = args.s.length;\n  return x * 42;"), risk: RiskLow,
			errors: []at{{ruleMagicNumbers, 3, 14}}, onlyRules: []string{ruleMagicNumbers}},
		{name: "email", src: tool(`  return "write to ops@example.com today";`), risk: RiskLow,
			errors: []at{{ruleEmail, 2, 20}}, onlyRules: []string{ruleEmail}},
		{name: "long key-like literal", src: tool(`  return "a1b2c3d4e5f6g7h8i9j0k1l2m3n4";`), risk: RiskHigh,
			errors: []at{{ruleSecret, 2, 11}}, onlyRules: []string{ruleSecret}},
		{name: "any", src: tool("  const v: any = args;\n  return v;"), risk: RiskLow,
			errors: []at{{ruleNoAny, 2, 12}}, onlyRules: []string{ruleNoAny}},
		{name: "syntax error", src: "const x = ;\n", risk: RiskLow,
			errors: []at{{ruleSyntax, 1, 11}}, onlyRules: []string{ruleSyntax}},
		{name: "eval", src: tool(`  return eval(args.s);`), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 10}}, onlyRules: []string{ruleNoEval}},
		{name: "new Function", src: tool(`  return new Function("a", args.s);`), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 14}}, onlyRules: []string{ruleNoEval}},
		{name: "constructor trick", src: tool(`  return (() => 0).constructor.constructor(args.s)();`), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 10}}, onlyRules: []string{ruleDynamicCode}},
		{name: "relative require and import", valid: true, risk: RiskLow,
			src: "import { add } from './lib/math';\nconst m = require('./lib/math');\nimport up = require('../lib/up');\n" +
				tool("  return add(m, up);")},
		{name: "allowed bare import", valid: true, risk: RiskLow, opts: Options{AllowedImports: []string{"zod"}},
			src: "import { z } from 'zod';\n" + tool("  return z;")},
		{name: "bare import not allowed", risk: RiskLow,
			src:    "import { z } from 'zod';\n" + tool("  return z;"),
			errors: []at{{ruleAllowedImports, 1, 19}}, onlyRules: []string{ruleAllowedImports}},
		{name: "DROP TABLE", valid: true, risk: RiskCritical, src: tool(`  return "DROP TABLE users";`)},
		{name: "process as property name", valid: true, risk: RiskLow,
			src: tool("  const obj = { process: args.s };\n  return obj.process;")},
		{name: "hex 0x2A", src: tool("  return args.s.length + 0x2A;"), risk: RiskLow,
			errors: []at{{ruleMagicNumbers, 2, 26}}, onlyRules: []string{ruleMagicNumbers}},
		{name: "enum initializer", valid: true, risk: RiskLow,
			src: "enum Level { Low = 5, High = 42 }\n" + tool("  return Level.High;")},
		{name: "literal type", valid: true, risk: RiskLow,
			src: "type Answer = 42 | -7;\n" + tool("  const a: Answer | string = args.s;\n  return a;")},
	})
}

// TestRules covers each rule beyond the seed's cases, firing and not firing.
func TestRules(t *testing.T) {
	runCases(t, []checkCase{
		// no-process
		{name: "process shorthand", src: tool("  return { process };"), risk: RiskLow,
			errors: []at{{ruleNoProcess, 2, 12}}},
		{name: "globalThis.process", src: tool("  return globalThis.process;"), risk: RiskLow,
			errors: []at{{ruleNoProcess, 2, 10}}},
		{name: "process.env", src: tool("  return process.env.HOME;"), risk: RiskMedium,
			errors: []at{{ruleNoProcess, 2, 10}}},
		{name: "typeof process in a type", valid: true, risk: RiskLow,
			src: tool("  let p: typeof globalThis | undefined;\n  return p;")},

		// no-eval
		{name: "indirect eval", src: tool("  return (0, eval)(args.s);"), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 14}}},
		{name: "globalThis eval", src: tool("  return globalThis['eval'](args.s);"), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 10}}},
		{name: "eval as a value", src: tool("  const e = eval;\n  return e(args.s);"), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 13}}},
		{name: "escaped eval", src: tool(`  return \u0065val(args.s);`), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 10}}},
		{name: "escaped global eval", src: tool(`  return globalThis.\u{65}val(args.s);`), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 10}}},
		{name: "Function call", src: tool("  return Function(args.s)();"), risk: RiskCritical,
			errors: []at{{ruleNoEval, 2, 10}}},
		{name: "instanceof Function", valid: true, risk: RiskLow,
			src: tool("  return (args as unknown) instanceof Function;")},

		// no-dynamic-code
		{name: "constructor via subscript", src: tool("  return ({})['constructor'](args.s);"), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 10}}},
		{name: "constructor chain not called", src: tool("  const F = args.constructor.constructor;\n  return F;"), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 13}}},
		{name: "constructor name is fine", valid: true, risk: RiskLow,
			src: tool("  return args.constructor.name;")},
		{name: "constructor compared is fine", valid: true, risk: RiskLow,
			src: tool("  return args.constructor === Object || Object !== args.constructor;")},
		{name: "constructor through a logical operator", src: tool("  const F = args.constructor || Object;\n  return F;"), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 13}}},
		{name: "constructor aliased then called", src: tool("  const F = (() => 0).constructor;\n  return F(args.s)();"), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 13}}},
		{name: "constructor passed along", src: tool("  return [args.s].map((() => 0).constructor);"), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 23}}},
		{name: "dynamic import", src: "export default async function run(args: { s: string }) {\n  return import(args.s);\n}\n",
			risk: RiskHigh, errors: []at{{ruleDynamicCode, 2, 10}}},
		{name: "type import is erased", valid: true, risk: RiskLow,
			src: "type Stats = import('fs').Stats;\n" + tool("  const s: Stats | string = args.s;\n  return s;")},
		{name: "setTimeout with a string", src: tool("  setTimeout('run()', 10);\n  return 1;"), risk: RiskCritical,
			errors: []at{{ruleDynamicCode, 2, 14}}},
		{name: "setTimeout with a function", valid: true, risk: RiskLow,
			src: tool("  setTimeout(() => args, 10);\n  return 1;")},
		{name: "with statement", src: "function f(o: { a: number }) { with (o) { return a; } }\nmodule.exports = f;\n",
			risk: RiskLow, errors: []at{{ruleDynamicCode, 1, 32}}},

		// allowed-imports
		{name: "node builtin points to tgp", src: "import { readFileSync } from 'node:fs';\n" + tool("  return readFileSync;"),
			risk: RiskHigh, errors: []at{{ruleAllowedImports, 1, 30}}},
		{name: "child_process require", src: tool("  return require('child_process');"), risk: RiskCritical,
			errors: []at{{ruleAllowedImports, 2, 18}}},
		{name: "dynamic require", src: tool("  return require(args.s);"), risk: RiskHigh,
			errors: []at{{ruleAllowedImports, 2, 10}}},
		{name: "require as a value", src: tool("  const r = require;\n  return r;"), risk: RiskHigh,
			errors: []at{{ruleAllowedImports, 2, 13}}},
		{name: "globalThis.require", src: tool("  return globalThis.require('./lib/x');"), risk: RiskLow,
			errors: []at{{ruleAllowedImports, 2, 10}}},
		{name: "export from bare module", src: "export * from 'lodash';\n" + tool("  return 1;"), risk: RiskLow,
			errors: []at{{ruleAllowedImports, 1, 15}}},
		{name: "import equals require", src: "import net = require('net');\n" + tool("  return net;"), risk: RiskHigh,
			errors: []at{{ruleAllowedImports, 1, 22}}},
		{name: "allowed subpath", valid: true, risk: RiskLow, opts: Options{AllowedImports: []string{"lodash"}},
			src: "import fp from 'lodash/fp';\n" + tool("  return fp;")},
		{name: "absolute lib path", valid: true, risk: RiskLow,
			src: "import { a } from '/lib/util';\n" + tool("  return a;")},

		// secrets
		{name: "github token prefix", src: tool(`  return "token ghp_abcdefghijklmnopqrstuvwxyz0123";`), risk: RiskHigh,
			errors: []at{{ruleSecret, 2, 17}}},
		{name: "named password", src: tool(`  const password = "hunter2";` + "\n  return password;"), risk: RiskHigh,
			errors: []at{{ruleSecret, 2, 20}}},
		{name: "api_key property", src: tool(`  return { api_key: "abc" };`), risk: RiskHigh,
			errors: []at{{ruleSecret, 2, 21}}},
		{name: "assigned token", src: tool(`  const o = { authToken: "" };` + "\n  o.authToken = 'xyz';\n  return o;"), risk: RiskHigh,
			errors: []at{{ruleSecret, 3, 17}}},
		{name: "credential-ish names that are not secrets", valid: true, risk: RiskLow,
			src: tool(`  const tokenType = "Bearer";` + "\n  const password = args.s;\n  return [tokenType, password];")},
		{name: "sentence is not a secret", valid: true, risk: RiskLow,
			src: tool(`  return "the quick brown fox jumps over 13 lazy dogs";`)},

		// magic numbers
		{name: "index access is flagged", src: tool("  return args.s[3];"), risk: RiskLow,
			errors: []at{{ruleMagicNumbers, 2, 17}}},
		{name: "negative allowed number", valid: true, risk: RiskLow, src: tool("  return args.s.indexOf('x') === -1;")},
		{name: "negated magic number", src: tool("  return -5;"), risk: RiskLow, errors: []at{{ruleMagicNumbers, 2, 11}}},
		{name: "custom allowed numbers", valid: true, risk: RiskLow, opts: Options{AllowedNumbers: []float64{42, 0.5}},
			src: tool("  return 42 * 0.5 + 4_2;")},
		{name: "empty allowed numbers", src: tool("  return 0;"), risk: RiskLow, opts: Options{AllowedNumbers: []float64{}},
			errors: []at{{ruleMagicNumbers, 2, 10}}},

		// default-export
		{name: "no default export warns", valid: true, risk: RiskLow,
			src: "export function helper(a: number): number { return a; }\n", warnings: []at{{ruleDefaultExport, 1, 1}}},
		{name: "export equals", valid: true, risk: RiskLow, noRules: []string{ruleDefaultExport},
			src: "function f(a: number): number { return a; }\nexport = f;\n"},
		{name: "export as default", valid: true, risk: RiskLow, noRules: []string{ruleDefaultExport},
			src: "function f(a: number): number { return a; }\nexport { f as default };\n"},

		// markdown-fence: a model's fenced answer compiles as a tagged template
		{name: "fenced source", risk: RiskLow,
			src:      "```typescript\nexport default function f(): number { return 1; }\n```\n",
			errors:   []at{{ruleMarkdownFence, 1, 1}},
			warnings: []at{{ruleDefaultExport, 1, 1}}},

		// parse-incomplete: esbuild compiles it, the grammar does not know it
		{name: "grammar gap", valid: true, risk: RiskMedium,
			src:      "export default async function f(y: AsyncIterable<Disposable>) {\n  for await (using x of y) { return x; }\n}\n",
			warnings: []at{{ruleParseIncomplete, 1, 1}}},

		// syntax
		{name: "syntax error hides lint", src: "const v: any = 42;\nconst x = ;\n", risk: RiskLow,
			errors: []at{{ruleSyntax, 2, 11}}, onlyRules: []string{ruleSyntax}},
		{name: "syntax error keeps risk", src: "const s = 'DROP TABLE t';\nconst x = ;\n", risk: RiskCritical,
			errors: []at{{ruleSyntax, 2, 11}}, onlyRules: []string{ruleSyntax}},
		{name: "invalid UTF-8", src: "const a = 1;\nconst b = 'x\xff';\n", risk: RiskLow,
			errors: []at{{ruleSyntax, 2, 13}}, onlyRules: []string{ruleSyntax}},
		{name: "top-level await", src: "await Promise.resolve(1);\nexport default function f() {}\n", risk: RiskLow,
			errors: []at{{ruleSyntax, 1, 1}}, onlyRules: []string{ruleSyntax}},
	})
}

// TestRisk covers every risk probe: level and position.
func TestRisk(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		want      Risk
		line, col int
	}{
		{"rm -rf", `const c = "rm -rf /tmp/x";`, RiskCritical, 1, 12},
		{"del /s", `const c = "del /s /q C:\\\\x";`, RiskCritical, 1, 12},
		{"mkfs", `const c = "mkfs.ext4 /dev/sda1";`, RiskCritical, 1, 12},
		{"fork bomb", `const c = ":(){ :|:& };:";`, RiskCritical, 1, 12},
		{"drop database in template", "const c = `drop database ${name}`;", RiskCritical, 1, 12},
		{"truncate table", `const c = "TRUNCATE TABLE logs";`, RiskCritical, 1, 12},
		{"truncate statement", `const c = "TRUNCATE logs;";`, RiskCritical, 1, 12},
		{"truncate in prose is fine", `const c = "truncate the text";`, RiskLow, 0, 0},
		{"vm import", `import vm from 'vm';`, RiskCritical, 1, 16},
		{"worker_threads require", `const w = require('node:worker_threads');`, RiskCritical, 1, 19},
		{"http import", `import http from 'node:http';`, RiskHigh, 1, 18},
		{"path traversal", `const p = "../../etc/passwd";`, RiskHigh, 1, 12},
		{"delete without where", `const q = "DELETE FROM users";`, RiskHigh, 1, 12},
		{"delete with where", `const q = "DELETE FROM users WHERE id = ?";`, RiskLow, 0, 0},
		{"update without where", "const q = `UPDATE users SET a = ${a}`;", RiskHigh, 1, 12},
		{"hex escape", `const s = "\x65val";`, RiskHigh, 1, 12},
		{"unicode escape of ASCII", `const s = "\u0065val";`, RiskHigh, 1, 12},
		{"unicode escape of non-ASCII is fine", `const s = "caf\u00e9";`, RiskLow, 0, 0},
		{"atob", `const s = atob("ZXZhbA==");`, RiskHigh, 1, 11},
		{"escaped name", `const s = \u0061tob;`, RiskHigh, 1, 11},
		{"escaped property", `const s = o.\u0061;`, RiskHigh, 1, 13},
		{"ignore-security comment", "/* @ignore-security */\nconst a = 1;", RiskHigh, 1, 1},
		{"hidden output", `const s = "<hidden>secret plan</hidden>";`, RiskHigh, 1, 12},
		{"process.env", `const h = process.env.HOME;`, RiskMedium, 1, 11},
		{"tgp.fetch", `const r = tgp.fetch("https://example.com");`, RiskMedium, 1, 11},
		{"tgp.write_file", `tgp.write_file("/tmp/x", "y");`, RiskMedium, 1, 1},
		{"tgp.exec_sql insert", `tgp.exec_sql("INSERT INTO t (a) VALUES (?)", [a]);`, RiskMedium, 1, 1},
		{"tgp.exec_sql update with where", `tgp.exec_sql("UPDATE t SET a = ? WHERE id = ?", [a, b]);`, RiskMedium, 1, 1},
		{"tgp.exec_sql select", `tgp.exec_sql("SELECT a FROM t WHERE id = ?", [b]);`, RiskLow, 0, 0},
		{"tgp.exec_sql computed", `tgp.exec_sql(q, [b]);`, RiskMedium, 1, 1},
		{"tgp.read_file", `tgp.read_file("/lib/x.ts");`, RiskLow, 0, 0},
		{"tgp.mcp_call", `const r = tgp.mcp_call("github", "create_issue", {});`, RiskMedium, 1, 11},
		{"tgp.mcp_read_resource", `const r = tgp.mcp_read_resource("github", "repo://x/readme");`, RiskMedium, 1, 11},
		{"tgp.mcp_get_prompt", `const r = tgp.mcp_get_prompt("github", "review", {});`, RiskMedium, 1, 11},
		{"require an MCP tool", `import createIssue from "/mcp/github/create_issue";`, RiskMedium, 1, 25},
		{"concatenations", "let s = 'a';\n" + strings.Repeat("s = s + 'b';\n", 11), RiskMedium, 12, 5},
		{"ten concatenations are fine", "let s = 'a';\n" + strings.Repeat("s += 'b';\n", 10), RiskLow, 0, 0},
		{"large source", "const s = 'x';\n" + strings.Repeat("// padding padding padding padding padding\n", 250), RiskMedium, 1, 1},
	}
	c := New(Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Check("tools/risk.ts", []byte(tc.src))
			if r.Risk != tc.want {
				t.Fatalf("Risk = %q, want %q; risks %v; errors %v", r.Risk, tc.want, r.Risks, r.Errors)
			}
			if tc.want == RiskLow {
				if len(r.Risks) != 0 {
					t.Fatalf("low risk with findings: %v", r.Risks)
				}
				return
			}
			found := false
			for _, f := range r.Risks {
				found = found || (f.Level == tc.want && f.Line == tc.line && f.Column == tc.col)
			}
			if !found {
				t.Fatalf("no %s risk at %d:%d; risks %v", tc.want, tc.line, tc.col, r.Risks)
			}
		})
	}
}

func TestMessagesSayWhatToDo(t *testing.T) {
	c := New(Options{})
	cases := []struct {
		src, rule string
		want      []string
	}{
		{tool("  return args.s.length * 42;"), ruleMagicNumbers, []string{"Found magic number 42", "args"}},
		{tool("  return args.s.length * 0x2A;"), ruleMagicNumbers, []string{"0x2A (= 42)"}},
		{tool("  const v: any = 1;\n  return v;"), ruleNoAny, []string{"unknown"}},
		{tool("  process.exit();"), ruleNoProcess, []string{"args"}},
		{"import fs from 'fs';\n" + tool("  return fs;"), ruleAllowedImports, []string{"tgp.read_file", "tgp.fetch", "tgp.exec_sql"}},
		{"import { z } from 'zod';\n" + tool("  return z;"), ruleAllowedImports, []string{"'zod'", "none are configured"}},
		{tool(`  return "a@b.io";`), ruleEmail, []string{"a@b.io", "args"}},
		{tool(`  return eval(args.s);`), ruleNoEval, []string{"JSON.parse"}},
	}
	for _, tc := range cases {
		r := c.Check("tools/msg.ts", []byte(tc.src))
		var msg string
		for _, f := range r.Errors {
			if f.Rule == tc.rule {
				msg = f.Message
			}
		}
		if msg == "" {
			t.Errorf("%q: no %s error in %v", tc.src, tc.rule, r.Errors)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s message %q lacks %q", tc.rule, msg, w)
			}
		}
	}
}

func TestSameViolationReportedOnce(t *testing.T) {
	// Both .constructor reads start at the same position: one error.
	r := New(Options{}).Check("tools/dup.ts", []byte(tool("  return args.constructor.constructor(args.s)();")))
	n := 0
	for _, f := range r.Errors {
		if f.Rule == ruleDynamicCode {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("got %d no-dynamic-code errors, want 1: %v", n, r.Errors)
	}
}

func TestErrorsSorted(t *testing.T) {
	src := "const b: any = 77;\n" + tool("  process.exit(42);\n  return eval(args.s);")
	r := New(Options{}).Check("tools/sorted.ts", []byte(src))
	if len(r.Errors) < 5 {
		t.Fatalf("want at least 5 errors, got %v", r.Errors)
	}
	for i := 1; i < len(r.Errors); i++ {
		p, f := r.Errors[i-1], r.Errors[i]
		if p.Line > f.Line || (p.Line == f.Line && p.Column > f.Column) {
			t.Fatalf("errors not sorted: %v before %v", p, f)
		}
	}
}

func TestResultJSON(t *testing.T) {
	r := New(Options{}).Check("tools/fib.ts", []byte(fibTool))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"valid":true,"errors":[],"warnings":[],"risk":"low","risks":[]}`
	if string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
}

func TestFindingString(t *testing.T) {
	f := Finding{Line: 12, Column: 5, Rule: "no-any", Message: "use unknown", Severity: SeverityError}
	if got, want := f.String(), "12:5 no-any: use unknown"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestRiskAtLeast(t *testing.T) {
	order := []Risk{RiskLow, RiskMedium, RiskHigh, RiskCritical}
	for i, a := range order {
		for j, b := range order {
			if got := a.AtLeast(b); got != (i >= j) {
				t.Errorf("%s.AtLeast(%s) = %v", a, b, got)
			}
		}
	}
	if Risk("bogus").AtLeast(RiskMedium) {
		t.Error("an unknown level must rank as low")
	}
}

func TestCheckFillsSharedTranspileCache(t *testing.T) {
	tr := transpile.New(0)
	c := New(Options{Transpiler: tr})
	src := []byte(fibTool)
	if tr.Cached("tools/fib.ts", src) {
		t.Fatal("cache not empty before Check")
	}
	c.Check("tools/fib.ts", src)
	if !tr.Cached("tools/fib.ts", src) {
		t.Fatal("Check did not leave the transpiled tool in the transpiler's cache")
	}
	if New(Options{}).tr != transpile.Default() {
		t.Fatal("nil Transpiler must mean transpile.Default()")
	}
}

func TestOptionsAreCopied(t *testing.T) {
	nums := []float64{42}
	imps := []string{"zod"}
	c := New(Options{AllowedNumbers: nums, AllowedImports: imps})
	nums[0], imps[0] = 7, "lodash"
	r := c.Check("tools/copy.ts", []byte("import { z } from 'zod';\n"+tool("  return z + 42;")))
	if !r.Valid {
		t.Fatalf("changing the caller's slices changed the Checker: %v", r.Errors)
	}
}

func TestConcurrentChecks(t *testing.T) {
	c := New(Options{})
	srcs := []struct {
		src   string
		valid bool
		risk  Risk
	}{
		{fibTool, true, RiskLow},
		{tool("  return eval(args.s);"), false, RiskCritical},
		{"import fs from 'fs';\n" + tool("  return fs;"), false, RiskHigh},
		{"const x = ;", false, RiskLow},
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				s := srcs[(g+i)%len(srcs)]
				r := c.Check("tools/c.ts", []byte(s.src))
				if r.Valid != s.valid || r.Risk != s.risk {
					t.Errorf("concurrent Check(%q) = valid %v risk %s, want %v %s", s.src, r.Valid, r.Risk, s.valid, s.risk)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestParseNumber(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"42", 42, true}, {"0x2A", 42, true}, {"0X2a", 42, true}, {"0o52", 42, true}, {"0b101010", 42, true},
		{"052", 42, true}, {"089", 89, true}, {"1_000", 1000, true}, {"0x_ff", 255, true}, {"1e3", 1000, true},
		{"2.5E-1", 0.25, true}, {".5", 0.5, true}, {"5.", 5, true}, {"42n", 42, true}, {"0x2An", 42, true},
		{"0", 0, true}, {"0.0", 0, true}, {"0xFFFFFFFFFFFFFFFFFF", 4722366482869645213695, true},
		{"", 0, false}, {"0x", 0, false}, {"abc", 0, false}, {"Infinity", 0, false}, {"0x1p3", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseNumber(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseNumber(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCredentialName(t *testing.T) {
	yes := []string{"password", "dbPassword", "DB_PASSWORD", "secret", "clientSecret", "token", "authToken",
		"apiKey", "api_key", "APIKEY", "apikey", "accessKey", "PRIVATE_KEY", "x-api-key"}
	no := []string{"tokenType", "secretName", "key", "monkey", "passwordHint", "tokens", "keyboard", ""}
	for _, s := range yes {
		if !credentialName(s) {
			t.Errorf("credentialName(%q) = false, want true", s)
		}
	}
	for _, s := range no {
		if credentialName(s) {
			t.Errorf("credentialName(%q) = true, want false", s)
		}
	}
}

// Result.Modules are the specifiers on the syntax tree: a comment inside a
// require or an import is only a comment (the approval gate finds a tool's
// modules here), a spec in a comment or a plain string is not a module,
// and a require the tree cannot resolve is not listed but rated high.
func TestModulesFromTheTree(t *testing.T) {
	c := New(Options{})
	src := `import { a } from /* reviewed */ "./lib/a";
import type { T } from "./lib/types";
export { b } from "./lib/b";
import e = require("./lib/e");
const c = require(/* c */ "./lib/c");
const d = require/**/("./lib/d");
const again = require("./lib/c");
// require("./lib/in_comment")
const s = "require('./lib/in_string')";
/** Uses them. */
export default function f(): T { return [a, c, d, e, again, s] as unknown as T; }
`
	res := c.Check("tools/f.ts", []byte(src))
	want := []string{"./lib/a", "./lib/types", "./lib/b", "./lib/e", "./lib/c", "./lib/d"}
	if !slices.Equal(res.Modules, want) {
		t.Errorf("Modules = %q, want %q", res.Modules, want)
	}
	res = c.Check("tools/g.ts", []byte("const n = './lib/' + 'x';\nconst m = require(n);\n/** g. */\nexport default function g(): unknown { return m; }\n"))
	if len(res.Modules) != 0 || res.Risk != RiskHigh {
		t.Errorf("a computed require: Modules %q, risk %s; want none listed, high", res.Modules, res.Risk)
	}
}

// TestCheckDeferredLeavesTheTranspilerOff is issue 28 goal 2: check_tool
// of a new source whose syntax tree is clean does not run the transpiler;
// an await outside an async function (which the grammar accepts) still
// gets the transpiler's diagnostic; an error only the transpiler finds is
// reported once the source was compiled (at its first exec), from the
// cache, as Check reports it.
func TestCheckDeferredLeavesTheTranspilerOff(t *testing.T) {
	tr := transpile.New(0)
	c := New(Options{Transpiler: tr})
	src := []byte(fibTool)
	if r := c.CheckDeferred("tools/fib.ts", src); !r.Valid || r.Risk != RiskLow {
		t.Fatalf("fib: valid %v risk %s errors %v", r.Valid, r.Risk, r.Errors)
	}
	if tr.Cached("tools/fib.ts", src) {
		t.Fatal("CheckDeferred ran the transpiler on a source whose tree is clean")
	}

	for _, tc := range []struct {
		name, src string
		line, col int
		says      string
	}{
		{"top-level await", "await Promise.resolve(1);\nexport default function f() {}\n", 1, 1, "top-level await"},
		{"top-level for await", "export default function f() {}\nfor await (const x of []) {}\n", 2, 5, "top-level await"},
		{"await in a plain function", "export default function f() {\n  return await g();\n}\n", 2, 10, `"async" function`},
		{"await in a plain arrow inside an async one", "export default async function f() {\n  const g = () => { await h(); };\n}\n", 2, 21, `"async" function`},
	} {
		r := c.CheckDeferred("tools/"+strings.ReplaceAll(tc.name, " ", "_")+".ts", []byte(tc.src))
		if r.Valid || !has(r.Errors, at{ruleSyntax, tc.line, tc.col}) || !strings.Contains(r.Errors[0].Message, tc.says) {
			t.Errorf("%s: valid %v errors %v, want a syntax error at %d:%d saying %q", tc.name, r.Valid, r.Errors, tc.line, tc.col, tc.says)
		}
	}
	for _, ok := range []string{
		"export default async function f() {\n  for await (const x of g()) { await x; }\n}\n",
		"export default async (n: number) => { const m = async () => await n; return await m(); };\n",
		"class A { async m() { await 0; } }\nexport default A;\n",
	} {
		if r := c.CheckDeferred("tools/ok.ts", []byte(ok)); !r.Valid {
			t.Errorf("%q: %v", ok, r.Errors)
		} else if tr.Cached("tools/ok.ts", []byte(ok)) {
			t.Errorf("%q: an await inside an async function sent it to the transpiler", ok)
		}
	}

	// Only the transpiler knows a name is declared twice: valid on the
	// tree, then, once compiled as the first exec compiles it, invalid
	// with the transpiler's position, as Check says it.
	dup := []byte("export default function f(): number {\n  let x = 1;\n  let x = 2;\n  return x;\n}\n")
	if r := c.CheckDeferred("tools/dup.ts", dup); !r.Valid {
		t.Fatalf("dup before its compile: %v", r.Errors)
	}
	if _, err := tr.Transpile("tools/dup.ts", dup); err == nil {
		t.Fatal("the transpiler accepts a name declared twice")
	}
	want := New(Options{Transpiler: transpile.New(0)}).Check("tools/dup.ts", dup)
	got := c.CheckDeferred("tools/dup.ts", dup)
	if got.Valid || !reflect.DeepEqual(got, want) || !has(got.Errors, at{ruleSyntax, 3, 7}) {
		t.Fatalf("dup after its compile: %+v, want Check's %+v", got, want)
	}
}

// TestCheckDeferredRatesAsCheck: whatever the transpiler would say, the
// risk and the modules CheckDeferred finds are Check's (the approval gate
// rates a source with CheckDeferred).
func TestCheckDeferredRatesAsCheck(t *testing.T) {
	srcs := testSources(t)
	for _, s := range []string{
		"let x = 1; let x = 2; const c = 'rm -rf /';", "break; import vm from 'vm';",
		"class A { get x(a) { return require('./lib/m'); } }", "const o = { __proto__: 1, __proto__: eval };",
		"function f() { await import('child_process'); }",
	} {
		srcs = append(srcs, []byte(s))
	}
	for i, src := range srcs {
		path := fmt.Sprintf("tools/s%d.ts", i)
		want := New(Options{Transpiler: transpile.New(0)}).Check(path, src)
		got := New(Options{Transpiler: transpile.New(0)}).CheckDeferred(path, src)
		if got.Risk != want.Risk || !reflect.DeepEqual(got.Risks, want.Risks) || !slices.Equal(got.Modules, want.Modules) {
			t.Errorf("%q: CheckDeferred rates %s %v %v, Check %s %v %v", src, got.Risk, got.Risks, got.Modules, want.Risk, want.Risks, want.Modules)
		}
	}
}
