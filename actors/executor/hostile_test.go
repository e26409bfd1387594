package executor

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Issue 10, item 13: a thrown value whose getters loop, throw or recurse
// was reported as "internal: the sandbox panicked" (and a getter of a getter
// that loops could hang the run for ever once its deadline had passed). It
// is the tool's own error, and describing it is bounded.
func TestThrownValueWithHostileGettersIsTheToolsError(t *testing.T) {
	tools := map[string]string{
		"tools/loop.ts":     "export default function () { throw { get message(): string { while (true) {} } }; }\n",
		"tools/throws.ts":   "export default function () { throw { get message(): string { throw new Error('boom'); } }; }\n",
		"tools/recurse.ts":  "const o: { message: string } = { get message(): string { return o.message; } };\nexport default function () { throw o; }\n",
		"tools/nested.ts":   "export default function () { throw { get message(): string { throw { toString(): string { while (true) {} } }; } }; }\n",
		"tools/subclass.ts": "class E extends Error { get message(): string { while (true) {} } }\nexport default function () { throw new E(); }\n",
		"tools/proxy.ts":    "export default function () { throw new Proxy({}, { get() { while (true) {} } }); }\n",
		"tools/reject.ts":   "export default async function () { await tgp.list_files('tools'); throw { get message(): string { while (true) {} } }; }\n",
		"tools/tostring.ts": "export default function () { throw { toString(): string { while (true) {} } }; }\n",
		"tools/prim.ts":     "(Number.prototype as any).toJSON = function () { while (true) {} };\nexport default function () { throw 5; }\n",
	}
	want := map[string]string{
		"loop":     "whose message could not be read: it ran longer than",
		"throws":   "whose message could not be read: it threw an object of class Error",
		"recurse":  "whose message could not be read: it overflowed the call stack",
		"nested":   "whose message could not be read: it threw an object of class Object",
		"subclass": "whose message could not be read: it ran longer than",
		"proxy":    "could not be read: it ran longer than",
		"reject":   "whose message could not be read: it ran longer than",
		"tostring": "that could not be turned into text: it ran longer than",
		"prim":     "the tool threw a non-Error value: 5",
	}
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, tools)
		for name, part := range want {
			t.Run(name, func(t *testing.T) {
				r := e.Exec(context.Background(), Request{Path: "tools/" + name + ".ts", Limits: Limits{Timeout: 30 * time.Second}})
				wantKind(t, r, "exception", part)
				// Bounded: a few describe budgets, never the run's 30 s.
				if r.Duration > 20*time.Second {
					t.Fatalf("describing the thrown value took %v", r.Duration)
				}
			})
		}
	})
}

// Issue 10, item 6: JSON.parse of text nested millions deep overflowed Go's
// stack, which is fatal: in-process it killed the host (this test binary).
// The nesting is measured first and refused with a RangeError the tool can
// catch; ordinary and moderately deep JSON still parses.
func TestDeeplyNestedJSONParseIsRefusedNotFatal(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/bomb.ts":   "export default (a: { n: number }) => JSON.parse('['.repeat(a.n) + ']'.repeat(a.n)).length;\n",
			"tools/caught.ts": "export default (a: { n: number }) => { try { return JSON.parse('{\"a\":'.repeat(a.n) + '1' + '}'.repeat(a.n)); } catch (e) { return String(e); } };\n",
			"tools/quoted.ts": "export default () => JSON.parse(JSON.stringify({ s: '[[[[{{{{' + '['.repeat(20000), n: [[1]] }, null, 0)).n[0][0];\n",
			"tools/revive.ts": "export default () => JSON.parse('{\"a\":[1,2],\"b\":\"x\"}', (k, v) => typeof v === 'number' ? v * 10 : v);\n",
			"tools/syntax.ts": "export default () => { try { return JSON.parse('{bad'); } catch (e) { return (e as Error).name; } };\n",
		}, func(o *Options) { o.Limits.MemoryBytes = 256 << 20 })
		r := e.Exec(context.Background(), Request{Path: "tools/bomb.ts", Args: []byte(`{"n": 5000000}`), Limits: Limits{Timeout: 60 * time.Second}})
		wantKind(t, r, "exception", "RangeError: JSON.parse: the text nests arrays or objects more than 10000 levels deep")
		r = run(t, e, "tools/caught.ts", `{"n": 10001}`)
		if !r.Success || !strings.Contains(string(r.Result), "RangeError") {
			t.Fatalf("a tool must be able to catch the refusal: %s %+v", r.Result, r.Error)
		}
		wantResult(t, run(t, e, "tools/bomb.ts", `{"n": 10000}`), "1")
		wantResult(t, run(t, e, "tools/quoted.ts", `{}`), "1") // brackets inside strings do not count
		wantResult(t, run(t, e, "tools/revive.ts", `{}`), `{"a":[10,20],"b":"x"}`)
		wantResult(t, run(t, e, "tools/syntax.ts", `{}`), `"SyntaxError"`)
	})
}

// Issue 10, item 6: in-process, goja's array built-ins loop natively over
// 'length' without looking at the interrupt: new Array(1e9).fill(0),
// new Array(2**28).join('xy') and Array.from({length: 2e9}) ran for 30 s to
// over 5 minutes past a 5 s limit (or died out of memory). They fail at once
// with memory_limit.
func TestArrayBombsInProcessFailFast(t *testing.T) {
	bombs := map[string]string{
		"fill":   "export default () => new Array(1e9).fill(0).length;\n",
		"join":   "export default () => new Array(2 ** 28).join('xy').length;\n",
		"from":   "export default () => Array.from({ length: 2e9 }).length;\n",
		"call":   "export default () => Array(2 ** 30).length;\n",
		"sparse": "export default () => { const a: number[] = []; a[2 ** 31] = 1; return a.indexOf(2); };\n",
		"borrow": "export default () => Array.prototype.join.call({ length: 2 ** 30 }, 'x').length;\n",
		"ctor":   "export default () => new ([] as any).constructor(2 ** 30).length;\n",
		"concat": "export default () => { const a: number[] = []; a[2 ** 27] = 1; return [].concat(a, a, a, a).length; };\n",
	}
	files := map[string]string{"tools/math/fib.ts": fibTool}
	for name, src := range bombs {
		files["tools/bomb/"+name+".ts"] = src
	}
	e := newExec(t, IsolationInProcess, files)
	for name := range bombs {
		t.Run(name, func(t *testing.T) {
			r := e.Exec(context.Background(), Request{Path: "tools/bomb/" + name + ".ts", Limits: Limits{Timeout: 60 * time.Second, MemoryBytes: 64 << 20}})
			wantKind(t, r, "memory_limit", "over the run's 67108864-byte memory limit")
			wantResult(t, run(t, e, "tools/math/fib.ts", `{"n": 10}`), "55")
		})
	}
}

// The array guards change no behaviour within the limit: constructors,
// subclasses, instanceof (goja cannot run instanceof on a Proxy by itself),
// species, borrowed methods. Both modes answer the same.
func TestGuardedArraysBehaveAsArrays(t *testing.T) {
	const tool = `class X extends Array<number> {}
export default function () {
  const a = [3, 1, 2];
  const x = new X(); x.push(1);
  return [a.map(v => v * 2).sort().join(','), Array.from('abc').join(''), Array.of(1, 2).length, new Array(3).fill(7).join(''),
    [].constructor === Array, a instanceof Array, ({}) instanceof Array, Array.isArray(x), x instanceof X, [] instanceof X, x.map(v => v) instanceof X,
    [1, [2, [3]]].flat(Infinity).length, Array(2).length, Array.prototype.join.name, [1, 2].concat([3], [4, 5]).length,
    new Uint8Array(2) instanceof Uint8Array, [] instanceof Uint8Array, new ArrayBuffer(1) instanceof ArrayBuffer,
    Array.prototype.slice.call({ length: 2, 0: 'a', 1: 'b' }).join('')];
}
`
	const want = `["2,4,6","abc",2,"777",true,true,false,true,true,false,true,3,2,"join",5,true,false,true,"ab"]`
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/arrays.ts": tool})
		wantResult(t, run(t, e, "tools/arrays.ts", `{}`), want)
	})
}

// Issue 10, item 13: memory bombs in worker mode were reported as
// "timeout": the worker's heap watchdog stopped the run for its memory, but
// a native loop ignored the interrupt until the parent's deadline killed the
// worker, and the parent knew only that it had killed it at the deadline.
// The worker now says why it is stopping ("abort" frame), and the parent
// kills a worker that ignores it with that reason.
func TestWorkerMemoryBombInNativeLoopIsMemoryLimit(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{
		"tools/fill.ts":     "export default () => new Array(1e9).fill(0).length;\n",
		"tools/math/fib.ts": fibTool,
	}, func(o *Options) { o.Limits.MemoryBytes = 64 << 20 })
	r := e.Exec(context.Background(), Request{Path: "tools/fill.ts", Limits: Limits{Timeout: 60 * time.Second, MemoryBytes: 64 << 20}})
	wantKind(t, r, "memory_limit", "memory limit")
	if r.Duration > 50*time.Second {
		t.Fatalf("the bomb ran %v: it must end at its memory limit, not its 60 s deadline", r.Duration)
	}
	wantResult(t, run(t, e, "tools/math/fib.ts", `{"n": 10}`), "55") // a fresh worker took over
}

// Issue 11, item 12: an endless JS loop in a worker is interrupted at its
// deadline and reported as a plain timeout; only a run that ignores the
// interrupt (a native built-in) gets its worker killed. (Before, the parent
// killed the worker 100 ms after the deadline it measured from its own
// clock, which on a loaded machine came before the worker's own interrupt
// could answer: "did not stop ..., so its worker was killed".)
func TestEndlessLoopInWorkerIsInterruptedNotKilled(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{"tools/freeze.ts": "export default () => { while (true) {} };\n"})
	for range 5 {
		r := e.Exec(context.Background(), Request{Path: "tools/freeze.ts", Limits: Limits{Timeout: 200 * time.Millisecond}})
		wantKind(t, r, "timeout", "longer than its 200ms limit and was stopped")
		if strings.Contains(r.Error.Message, "killed") {
			t.Fatalf("an interruptible loop got its worker killed: %s", r.Error.Message)
		}
	}
}
