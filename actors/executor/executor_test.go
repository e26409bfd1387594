package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/internal/leaktest"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/samples"
)

func TestMain(m *testing.M) {
	testHooks()    // test-only worker behaviour (confine_test.go)
	pipeEchoMain() // the echo child of the pipe-floor benchmark
	WorkerMain()   // the test binary doubles as the sandbox worker
	goleak.VerifyTestMain(m, leaktest.Options...)
}

const fibTool = samples.FibTool

var modes = []Isolation{IsolationInProcess, IsolationProcess}

// newExec makes a tool root holding files and an executor over it.
func newExec(t testing.TB, mode Isolation, files map[string]string, tweak ...func(*Options)) *Executor {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{Root: root, Isolation: mode, Workers: 2, TempDir: t.TempDir(), Limits: Limits{Timeout: 2 * time.Second, MemoryBytes: 128 << 20}}
	for _, f := range tweak {
		f(&opts)
	}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func run(t testing.TB, e *Executor, path, args string) execclient.Result {
	t.Helper()
	return e.Exec(context.Background(), Request{Path: path, Args: json.RawMessage(args)})
}

func wantResult(t *testing.T, r execclient.Result, want string) {
	t.Helper()
	if !r.Success {
		t.Fatalf("run failed: %+v", r.Error)
	}
	if string(r.Result) != want {
		t.Fatalf("result = %s, want %s", r.Result, want)
	}
}

func wantKind(t *testing.T, r execclient.Result, kind Kind, msgPart string) {
	t.Helper()
	if r.Success || r.Error == nil {
		t.Fatalf("run succeeded with %s, want a %s error", r.Result, kind)
	}
	if r.Error.Kind != kind {
		t.Fatalf("error kind = %s (%s), want %s", r.Error.Kind, r.Error.Message, kind)
	}
	if !strings.Contains(r.Error.Message, msgPart) {
		t.Fatalf("error message %q does not contain %q", r.Error.Message, msgPart)
	}
}

func forModes(t *testing.T, f func(t *testing.T, mode Isolation)) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) { f(t, m) })
	}
}

func TestFibonacci(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/math/fib.ts": fibTool})
		r := run(t, e, "tools/math/fib.ts", `{"n": 10}`)
		wantResult(t, r, "55")
		if r.Hash == "" || len(r.Logs) != 0 {
			t.Fatalf("hash %q logs %v", r.Hash, r.Logs)
		}
	})
}

func TestAsyncToolReadsHostFile(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"data.json": `{"secret": 42}`,
			"tools/reader.ts": `export default async function () {
				const content = await tgp.read_file('data.json');
				tgp.log('read', content.length, {bytes: content.length});
				return JSON.parse(content);
			}`,
		})
		r := run(t, e, "tools/reader.ts", `{}`)
		wantResult(t, r, `{"secret":42}`)
		if want := []string{`read 14 {"bytes":14}`}; !reflect.DeepEqual(r.Logs, want) {
			t.Fatalf("logs = %q, want %q", r.Logs, want)
		}
		if r.Calls != 1 {
			t.Fatalf("calls = %d, want 1", r.Calls)
		}
	})
}

func TestCompositionThroughRequire(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/lib/math.ts":      "export function double(n: number) { return n * 2; }\nexport const PI = 3.14;\n",
			"tools/lib/index.ts":     "export { double } from './math';\nexport * from './more';\n",
			"tools/lib/more.ts":      "export const triple = (n: number) => n * 3;\nexport default 'not re-exported';\n",
			"tools/star.ts":          "import * as lib from './lib';\nimport def from './lib/more';\nexport default () => [lib.triple(2), Object.keys(lib).sort(), def];\n",
			"tools/calc.ts":          "const { double, PI } = require('./lib/math');\nexport default function (args: { val: number }) { return double(args.val) + PI; }\n",
			"tools/calc_import.ts":   "import { double } from './lib';\nimport * as m from '/lib/lib/math';\nexport default (a: { val: number }) => double(a.val) + m.PI;\n",
			"tools/cycle/a.ts":       "import * as b from './b';\nexport const name = 'a';\nexport default () => b.peer();\n",
			"tools/cycle/b.ts":       "import * as a from './a';\nexport const peer = () => 'b sees ' + a.name;\n",
			"tools/escape.ts":        "const x = require('../../outside');\nexport default () => x;\n",
			"tools/missing.ts":       "const x = require('./nope');\nexport default () => x;\n",
			"tools/catch_require.ts": "export default () => { try { require('./nope'); return 'loaded'; } catch (e) { return 'caught ' + e.code; } };\n",
			"tools/shared_module.ts": "import * as m1 from './lib/counter';\nconst m2 = require('./lib/counter.ts');\nexport default () => [m1.next(), m2.next()];\n",
			"tools/lib/counter.ts":   "let n = 0;\nexport const next = () => ++n;\n",
		})
		wantResult(t, run(t, e, "tools/calc.ts", `{"val": 10}`), "23.14")
		wantResult(t, run(t, e, "tools/calc_import.ts", `{"val": 10}`), "23.14")
		wantResult(t, run(t, e, "tools/cycle/a.ts", `{}`), `"b sees a"`)
		wantResult(t, run(t, e, "tools/star.ts", `{}`), `[6,["double","triple"],"not re-exported"]`)
		wantResult(t, run(t, e, "tools/shared_module.ts", `{}`), `[1,2]`) // one module instance per run
		wantResult(t, run(t, e, "tools/shared_module.ts", `{}`), `[1,2]`) // and none across runs
		r := run(t, e, "tools/escape.ts", `{}`)
		wantKind(t, r, "exception", "leaves the tools directory")
		if r.Error.Code != driver.CodeSecurity {
			t.Fatalf("code = %q", r.Error.Code)
		}
		wantKind(t, run(t, e, "tools/missing.ts", `{}`), "exception", "cannot find module \"./nope\"")
		wantResult(t, run(t, e, "tools/catch_require.ts", `{}`), `"caught not_found"`)
	})
}

func TestImportsOnlyFromAllowList(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/fs.ts":                   "import fs from 'fs';\nexport default () => fs.readFileSync('/etc/passwd', 'utf8');\n",
			"tools/vendored.ts":             "import { slug } from 'slugify';\nexport default (a: { s: string }) => slug(a.s);\n",
			"tools/vendor/slugify/index.ts": "export const slug = (s: string) => s.toLowerCase().split(' ').join('-');\n",
		}, func(o *Options) { o.AllowedImports = []string{"slugify"} })
		r := run(t, e, "tools/fs.ts", `{}`)
		wantKind(t, r, "exception", `import of module "fs" is not allowed`)
		if r.Error.Code != "security" {
			t.Fatalf("code %q", r.Error.Code)
		}
		wantResult(t, run(t, e, "tools/vendored.ts", `{"s": "Hello Big World"}`), `"hello-big-world"`)
	})
}

func TestSyntaxErrorReportsLine(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/bad.ts": "export default () => {\n  const x = ;\n};\n"})
		wantKind(t, run(t, e, "tools/bad.ts", `{}`), "compile_error", "tools/bad.ts:2:13:")
	})
}

func TestStackHasTypeScriptLines(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/throw.ts": "type T = { a: number };\n\nfunction inner(t: T): never {\n  throw new Error('boom ' + t.a);\n}\n\nexport default (a: T) => inner(a);\n"})
		r := run(t, e, "tools/throw.ts", `{"a": 7}`)
		wantKind(t, r, "exception", "Error: boom 7")
		if !strings.Contains(r.Error.Stack, "tools/throw.ts:4:") {
			t.Fatalf("stack does not point at the TypeScript line 4: %q", r.Error.Stack)
		}
	})
}

func TestInfiniteLoopTimesOutAndHostStaysResponsive(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/freeze.ts": "export default () => { while (true) {} };\n", "tools/math/fib.ts": fibTool})
		r := e.Exec(context.Background(), Request{Path: "tools/freeze.ts", Limits: Limits{Timeout: 100 * time.Millisecond}})
		wantKind(t, r, "timeout", "longer than its 100ms limit")
		wantResult(t, run(t, e, "tools/math/fib.ts", `{"n": 10}`), "55")
	})
}

func TestNativeBuiltinThatIgnoresInterruptIsKilled(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{
		// A default sort of 3M numbers converts and compares strings natively
		// for seconds; goja cannot interrupt it, the parent's SIGKILL can.
		"tools/sort.ts": "export default (a: { n: number }) => { const xs = new Array(a.n).fill(0); for (let i = 0; i < a.n; i++) xs[i] = (i * 7919) % a.n; return xs.sort().length; };\n",
	})
	r := e.Exec(context.Background(), Request{Path: "tools/sort.ts", Args: json.RawMessage(`{"n": 3000000}`), Limits: Limits{Timeout: 1500 * time.Millisecond, MemoryBytes: 1 << 30}})
	wantKind(t, r, "timeout", "")
	wantResult(t, run(t, e, "tools/sort.ts", `{"n": 3}`), "3") // a fresh worker took over
}

func TestMemoryBombs(t *testing.T) {
	bombs := map[string]string{
		"repeat":      "export default () => 'x'.repeat(2 ** 36).length;\n",
		"arraybuffer": "export default () => new ArrayBuffer(2 ** 33).byteLength;\n",
		"typedarray":  "export default () => new Float64Array(2 ** 31).length;\n",
		"padstart":    "export default () => 'x'.padStart(2 ** 34).length;\n",
		"doubling":    "export default () => { let s = 'x'; for (;;) s += s; };\n",
		"arrays":      "export default () => { const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(1)); };\n",
		"objects":     "export default () => { const a: object[] = []; for (let i = 0; ; i++) a.push({ i, s: 'v' + i }); };\n",
	}
	files := map[string]string{"tools/math/fib.ts": fibTool}
	for name, src := range bombs {
		files["tools/bomb/"+name+".ts"] = src
	}
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, files)
		for name := range bombs {
			if mode == IsolationInProcess && (name == "doubling") {
				continue // one 1 GiB step can outrun the in-process watchdog: process isolation exists for this
			}
			t.Run(name, func(t *testing.T) {
				// A generous timeout: under -race on a loaded 2-core machine an
				// array bomb once took over 10 s to reach 64 MiB. The limit
				// that must stop it is the memory one.
				r := e.Exec(context.Background(), Request{Path: "tools/bomb/" + name + ".ts", Limits: Limits{Timeout: 60 * time.Second, MemoryBytes: 64 << 20}})
				wantKind(t, r, "memory_limit", "memory limit")
				wantResult(t, run(t, e, "tools/math/fib.ts", `{"n": 10}`), "55")
			})
		}
	})
}

func TestDeepRecursion(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/rec.ts":   "function r(n: number): number { return r(n + 1) + 1; }\nexport default () => r(0);\n",
			"tools/catch.ts": "function r(n: number): number { return r(n + 1) + 1; }\nexport default () => { try { return r(0); } catch (e) { return 'caught'; } };\n",
		})
		wantKind(t, run(t, e, "tools/rec.ts", `{}`), "stack_overflow", "1000 frames")
		wantKind(t, run(t, e, "tools/catch.ts", `{}`), "stack_overflow", "runaway recursion") // a tool cannot swallow the limit
	})
}

func TestJailbreaks(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		outside := t.TempDir()
		secret := filepath.Join(outside, "secret.txt")
		os.WriteFile(secret, []byte("top secret"), 0o644)
		e := newExec(t, mode, map[string]string{
			"tools/dotdot.ts":   "export default () => tgp.read_file('../secret.txt');\n",
			"tools/abs.ts":      "export default () => tgp.read_file('/etc/passwd');\n",
			"tools/symlink.ts":  "export default () => tgp.read_file('link.txt');\n",
			"tools/write.ts":    "export default () => tgp.write_file('../pwned.txt', 'x');\n",
			"tools/writelib.ts": "export default () => tgp.write_file('/lib/dotdot.ts', 'x');\n",
			"tools/git.ts":      "export default () => tgp.read_file('.git/config');\n",
			"tools/catch.ts":    "export default async () => { try { await tgp.read_file('../x'); } catch (e) { return e.code; } };\n",
		})
		os.Symlink(secret, filepath.Join(e.Options().Root, "link.txt"))
		for _, tool := range []string{"dotdot", "abs", "symlink", "write", "writelib", "git"} {
			r := run(t, e, "tools/"+tool+".ts", `{}`)
			wantKind(t, r, "exception", "security violation")
			if r.Error.Code != "security" {
				t.Fatalf("%s: code %q", tool, r.Error.Code)
			}
		}
		wantResult(t, run(t, e, "tools/catch.ts", `{}`), `"security"`)
		wantKind(t, run(t, e, "../outside.ts", `{}`), "security", "climbs out")
		if _, err := os.Stat(filepath.Join(filepath.Dir(e.Options().Root), "pwned.txt")); err == nil {
			t.Fatal("a file was written outside the root")
		}
	})
}

func TestForbiddenGlobals(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/exit.ts":       "export default () => { process.exit(1); };\n",
			"tools/fnctor.ts":     "export default () => (function () {}).constructor('return 1')();\n",
			"tools/asyncctor.ts":  "export default () => (async function () {}).constructor('return 1');\n",
			"tools/genctor.ts":    "export default () => (function* () {}).constructor('yield 1');\n",
			"tools/function.ts":   "export default () => new Function('return 1')();\n",
			"tools/eval.ts":       "export default () => (0, eval)('1 + 1');\n",
			"tools/instanceof.ts": "export default () => (() => 1) instanceof Function;\n",
		})
		wantKind(t, run(t, e, "tools/exit.ts", `{}`), "exception", "process is not defined")
		for _, tool := range []string{"fnctor", "asyncctor", "genctor", "function", "eval"} {
			wantKind(t, run(t, e, "tools/"+tool+".ts", `{}`), "exception", "code generation from strings is disabled")
		}
		wantResult(t, run(t, e, "tools/instanceof.ts", `{}`), "true")
	})
}

func TestFreshRuntimePerRun(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/patch.ts":  "export default () => { (Array.prototype as any).map = () => 'patched'; (globalThis as any).leak = 1; return [1].map((x) => x); };\n",
			"tools/victim.ts": "export default () => [[1, 2].map((x) => x * 2), typeof (globalThis as any).leak];\n",
		}, func(o *Options) { o.Workers = 1 }) // one worker: both runs share it
		wantResult(t, run(t, e, "tools/patch.ts", `{}`), `"patched"`)
		wantResult(t, run(t, e, "tools/victim.ts", `{}`), `[[2,4],"undefined"]`)
	})
}

func TestDeterminism(t *testing.T) {
	tool := map[string]string{"tools/dice.ts": "export default () => [Math.random(), Math.random(), Date.now(), new Date().toString()];\n"}
	forModes(t, func(t *testing.T, mode Isolation) {
		fixed := func(seed uint64) func(*Options) {
			return func(o *Options) {
				o.Seed = func() uint64 { return seed }
				o.Clock = func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 7200)) }
			}
		}
		a := run(t, newExec(t, mode, tool, fixed(42)), "tools/dice.ts", `{}`)
		b := run(t, newExec(t, mode, tool, fixed(42)), "tools/dice.ts", `{}`)
		c := run(t, newExec(t, mode, tool, fixed(43)), "tools/dice.ts", `{}`)
		if !a.Success || string(a.Result) != string(b.Result) {
			t.Fatalf("same sources, different output:\n%s\n%s", a.Result, b.Result)
		}
		if string(a.Result) == string(c.Result) {
			t.Fatal("a different seed gave the same random numbers")
		}
		if !strings.Contains(string(a.Result), "1780308000000") || !strings.Contains(string(a.Result), "GMT+0000") {
			t.Fatalf("clock not from the source or not UTC: %s", a.Result)
		}
	})
}

func TestMiddlewareSeesEveryCallInOrder(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"a.txt": "A", "b.txt": "B",
			"tools/many.ts": "export default async () => { const [a, b] = await Promise.all([tgp.read_file('a.txt'), tgp.read_file('b.txt')]); const t = Date.now(); await tgp.write_file('/tmp/x', a + b); return [a, b, Math.random() < 2, await tgp.read_file('/tmp/x'), t > 0]; };\n",
		})
		var mu sync.Mutex
		var seen []string
		mw := func(next driver.Host) driver.Host {
			return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%d %s.%s %s", c.Seq, c.Driver, c.Op, c.Request))
				mu.Unlock()
				return next.Do(ctx, c)
			})
		}
		r := e.Exec(context.Background(), Request{Path: "tools/many.ts", Middleware: []driver.Middleware{mw}})
		wantResult(t, r, `["A","B",true,"AB",true]`)
		mu.Lock()
		defer mu.Unlock()
		want := map[string]bool{
			`1 fs.read_file {"path":"a.txt"}`: true, `2 fs.read_file {"path":"b.txt"}`: true, `3 clock.now `: true,
			`4 fs.write_file {"path":"/tmp/x","content":"AB"}`: true, `5 random.seed `: true, `6 fs.read_file {"path":"/tmp/x"}`: true,
		}
		if len(seen) != len(want) {
			t.Fatalf("middleware saw %d calls, want %d: %q", len(seen), len(want), seen)
		}
		for _, s := range seen {
			if !want[s] {
				t.Fatalf("unexpected call %q (all: %q)", s, seen)
			}
		}
	})
}

func TestTmpIsScratchAndWiped(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/tmp.ts":     "export default async () => { await tgp.write_file('/tmp/a/b.txt', 'hi'); return [await tgp.read_file('/tmp/a/b.txt'), await tgp.list_files('/tmp')]; };\n",
			"tools/export.ts":  "export default async () => { await tgp.write_file('exports/r.csv', 'a|b'); return tgp.list_files('exports'); };\n",
			"tools/nowrite.ts": "export default () => tgp.write_file('data.json', '{}');\n",
		}, func(o *Options) { o.WriteDirs = []string{"exports"} })
		wantResult(t, run(t, e, "tools/tmp.ts", `{}`), `["hi",["/tmp/a/b.txt"]]`)
		if left, _ := os.ReadDir(e.Options().TempDir); len(left) != 0 {
			t.Fatalf("scratch not wiped: %v", left)
		}
		wantResult(t, run(t, e, "tools/export.ts", `{}`), `["exports/r.csv"]`)
		wantKind(t, run(t, e, "tools/nowrite.ts", `{}`), "exception", "writes are allowed only under /tmp and exports")
	})
}

func TestOutputLimits(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/big.ts":    "export default () => 'x'.repeat(2 << 20);\n",
			"tools/chatty.ts": "export default () => { for (let i = 0; ; i++) console.log('line ' + i); };\n",
		})
		wantKind(t, run(t, e, "tools/big.ts", `{}`), "output_too_large", "output limit")
		wantKind(t, run(t, e, "tools/chatty.ts", `{}`), "output_too_large", "logged more than")
	})
}

func TestBadInputs(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/math/fib.ts": fibTool,
			"tools/noexport.ts": "export const x = 1;\n",
			"tools/never.ts":    "export default () => new Promise(() => {});\n",
			"tools/reject.ts":   "export default async () => { throw new TypeError('bad input'); };\n",
			"tools/undef.ts":    "export default () => {};\n",
			"tools/bigint.ts":   "export default () => 10n;\n",
			"tools/binary.ts":   "export default () => '\xec\xec\xec';\n",
		})
		wantKind(t, run(t, e, "tools/math/fib.ts", `[1]`), "invalid_args", "JSON object")
		wantKind(t, run(t, e, "tools/math/fib.ts", `{"n":`), "invalid_args", "not valid JSON")
		wantKind(t, run(t, e, "tools/nope.ts", `{}`), "not_found", "no tool at")
		wantKind(t, run(t, e, "tools/noexport.ts", `{}`), "no_default_export", "export default")
		wantKind(t, run(t, e, "tools/never.ts", `{}`), "unsettled", "never settles")
		wantKind(t, run(t, e, "tools/reject.ts", `{}`), "exception", "TypeError: bad input")
		wantResult(t, run(t, e, "tools/undef.ts", `{}`), "null")
		wantKind(t, run(t, e, "tools/bigint.ts", `{}`), "exception", "cannot be turned into JSON")
		wantKind(t, run(t, e, "tools/binary.ts", `{}`), "compile_error", "not valid UTF-8")
	})
}

func TestRegexpBacktrackingIsBounded(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			// The lookahead forces goja's backtracking engine.
			"tools/redos.ts": "export default (a: { n: number }) => new RegExp('^(a+)+(?=b)$').test('a'.repeat(a.n) + 'c');\n",
		})
		r := e.Exec(context.Background(), Request{Path: "tools/redos.ts", Args: json.RawMessage(`{"n": 40}`), Limits: Limits{Timeout: 30 * time.Second}})
		// The match gives up after sandbox.RegexpTimeout. goja reports a
		// match that gave up as "no match" (false); what must hold is that
		// the run ends by itself, long before its own 30 s deadline.
		if !r.Success || string(r.Result) != "false" {
			t.Fatalf("catastrophic backtracking: %s %+v", r.Result, r.Error)
		}
	})
}

func TestAsyncGeneratorsAreLowered(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/gen.ts": "async function* g(n: number) { for (let i = 0; i < n; i++) yield i; }\nexport default async (a: { n: number }) => { let s = 0; for await (const x of g(a.n)) s += x; return s; };\n"})
		wantResult(t, run(t, e, "tools/gen.ts", `{"n": 5}`), "10")
	})
}

func TestCancelledByCaller(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/freeze.ts": "export default () => { while (true) {} };\n"})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		r := e.Exec(ctx, Request{Path: "tools/freeze.ts"})
		wantKind(t, r, "cancelled", "cancelled")
	})
}

func TestConcurrentRuns(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/math/fib.ts": fibTool, "tools/freeze.ts": "export default () => { while (true) {} };\n"})
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Go(func() {
				if i%10 == 0 {
					r := e.Exec(context.Background(), Request{Path: "tools/freeze.ts", Limits: Limits{Timeout: 50 * time.Millisecond}})
					if r.Error == nil || r.Error.Kind != "timeout" {
						errs <- fmt.Errorf("freeze: %+v", r.Error)
					}
					return
				}
				r := e.Exec(context.Background(), Request{Path: "tools/math/fib.ts", Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))})
				if !r.Success {
					errs <- fmt.Errorf("fib(%d): %+v", i, r.Error)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func TestClosedExecutor(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{"tools/math/fib.ts": fibTool})
	e.Close()
	r := run(t, e, "tools/math/fib.ts", `{"n": 1}`)
	if r.Error == nil || !errors.Is(r.Error, ErrCancelled) {
		t.Fatalf("got %+v", r.Error)
	}
}

// A tool that fires calls without awaiting them gets at most
// sandbox.MaxInFlight at once, and none of them outlives its run.
func TestUnawaitedCallsAreBoundedAndEndWithTheRun(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"a.txt":         "A",
			"tools/spam.ts": "export default () => { for (let i = 0; i < 500; i++) tgp.read_file('a.txt'); return 'returned'; };\n",
		})
		var inFlight, peak, total atomic.Int64
		mw := func(next driver.Host) driver.Host {
			return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				defer inFlight.Add(-1)
				total.Add(1)
				time.Sleep(time.Millisecond)
				return next.Do(ctx, c)
			})
		}
		r := e.Exec(context.Background(), Request{Path: "tools/spam.ts", Middleware: []driver.Middleware{mw}})
		wantResult(t, r, `"returned"`)
		after := total.Load()
		if inFlight.Load() != 0 {
			t.Fatalf("%d calls still in flight after the run returned", inFlight.Load())
		}
		time.Sleep(20 * time.Millisecond)
		if total.Load() != after {
			t.Fatalf("calls happened after the run returned: %d then %d", after, total.Load())
		}
		if p := peak.Load(); p > 64 {
			t.Fatalf("%d calls were in flight at once; the cap is 64", p)
		}
	})
}

// A call whose frame would exceed the worker protocol's limit gets a clear
// error the tool can catch, not a crash, and the worker keeps serving.
func TestOversizedCallIsAClearError(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{
		"tools/huge.ts": "export default async () => { try { await tgp.write_file('/tmp/x', '\\u0000'.repeat(11 << 20)); return 'written'; } catch (e) { return e.code + ': ' + e.message; } };\n",
		"tools/ok.ts":   "export default () => 'still serving';\n",
	}, func(o *Options) { o.Workers = 1; o.Limits.MemoryBytes = 2 << 30 }) // room to encode 66 MB, even under -race
	// Generous: building 66 MB under -race on a loaded 2-core machine took 20 s once.
	r := e.Exec(context.Background(), Request{Path: "tools/huge.ts", Limits: Limits{Timeout: 90 * time.Second}})
	if !r.Success || !strings.Contains(string(r.Result), "invalid_argument: the request is too large") {
		t.Fatalf("%s %+v", r.Result, r.Error)
	}
	wantResult(t, run(t, e, "tools/ok.ts", `{}`), `"still serving"`)
}
