package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestStackNamesNestedToolPathOnce: a frame of a tool in a nested directory
// names the tool's path once (issue 11: goja resolved the source map's
// source, the full path, against the module's own directory and printed
// tools/math/tools/math/sleep.ts), in the entry module and in a required
// one.
func TestStackNamesNestedToolPathOnce(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/math/sleep.ts":     "import { fail } from './deep/fail';\n\nexport default (a: { n: number }) => fail(a.n);\n",
			"tools/math/deep/fail.ts": "export function fail(n: number): never {\n  throw new Error('boom ' + n);\n}\n",
		})
		r := run(t, e, "tools/math/sleep.ts", `{"n": 3}`)
		wantKind(t, r, "exception", "Error: boom 3")
		for _, want := range []string{"at fail (tools/math/deep/fail.ts:2:", "tools/math/sleep.ts:3:"} {
			if !strings.Contains(r.Error.Stack, want) {
				t.Errorf("stack does not contain %q:\n%s", want, r.Error.Stack)
			}
		}
		if strings.Contains(r.Error.Stack, "tools/math/tools/") || strings.Contains(r.Error.Stack, "deep/tools/") {
			t.Errorf("stack doubles a path:\n%s", r.Error.Stack)
		}
	})
}

// TestThrownNonErrorIsReportedAsJSON: a value thrown that is not an Error
// is described by its JSON (issue 11, item 9: throw {code: "E_BAD"} was
// reported as "[object Object]"), its code kept; a primitive as JSON writes
// it.
func TestThrownNonErrorIsReportedAsJSON(t *testing.T) {
	cases := map[string]string{
		`{code: "E_BAD"}`:                    `the tool threw a non-Error value: {"code":"E_BAD"}`,
		`{code: "E", detail: [1, 2]}`:        `the tool threw a non-Error value: {"code":"E","detail":[1,2]}`,
		`[1, "a"]`:                           `the tool threw a non-Error value: [1,"a"]`,
		`"oops"`:                             `the tool threw a non-Error value: "oops"`,
		`42`:                                 `the tool threw a non-Error value: 42`,
		`null`:                               `the tool threw a non-Error value: null`,
		`undefined`:                          `the tool threw a non-Error value: undefined`,
		`NaN`:                                `the tool threw a non-Error value: NaN`,
		`10n`:                                `the tool threw a non-Error value: 10n`,
		`Symbol("x")`:                        `the tool threw a non-Error value: Symbol(x)`,
		`{ toString() { return "custom" } }`: `custom`,
		`new Map([["a", 1]])`:                `[object Map]`,
	}
	files := map[string]string{}
	names := map[string]string{}
	i := 0
	for expr := range cases {
		i++
		name := fmt.Sprintf("tools/throw/t%d.ts", i)
		files[name] = "export default async function () { await tgp.list_files('tools'); throw " + expr + "; }\n"
		names[expr] = name
	}
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, files)
		for expr, want := range cases {
			r := run(t, e, names[expr], `{}`)
			if r.Success || r.Error.Kind != "exception" || r.Error.Message != want {
				t.Errorf("throw %s: got %+v, want exception %q", expr, r.Error, want)
			}
		}
		r := run(t, e, names[`{code: "E_BAD"}`], `{}`)
		if r.Error.Code != "E_BAD" || r.Error.Error() != `exception: the tool threw a non-Error value: {"code":"E_BAD"}` {
			t.Errorf("got %q code %q", r.Error.Error(), r.Error.Code)
		}
	})
}

// TestArgsAreCheckedAgainstDeclaredTypes: arguments that do not match the
// tool's declared parameter types fail the run with invalid_args naming the
// path and what was expected (issue 11, item 9: a number for a string
// parameter ran and returned null, success), in both isolation modes and
// for a Source given with the request (replay) as for the file.
func TestArgsAreCheckedAgainstDeclaredTypes(t *testing.T) {
	const greet = "interface Args { name: string; times?: number; mode?: 'loud' | 'soft' }\n" +
		"export default function greet(args: Args) { return (args.name.toUpperCase ? 'ok ' : 'bad ') + args.name; }\n"
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/text/greet.ts": greet, "tools/free.ts": "export default ({ a }) => a ?? null;\n"})
		wantResult(t, run(t, e, "tools/text/greet.ts", `{"name": "ada"}`), `"ok ada"`)
		wantKind(t, run(t, e, "tools/text/greet.ts", `{"name": 5}`), "invalid_args", "args.name: expected string, got number")
		wantKind(t, run(t, e, "tools/text/greet.ts", `{}`), "invalid_args", "args.name: expected string, got nothing (the property is required)")
		wantKind(t, run(t, e, "tools/text/greet.ts", `{"name": "a", "mode": "shout"}`), "invalid_args", `args.mode: expected one of "loud", "soft", got "shout"`)
		r := e.Exec(context.Background(), Request{Path: "tools/text/greet.ts", Source: []byte(greet), Args: json.RawMessage(`{"name": "a", "times": "2"}`)})
		wantKind(t, r, "invalid_args", "args.times: expected number, got string")
		if r.Calls != 0 || !strings.Contains(r.Error.Message, "tools/text/greet.ts declares") {
			t.Fatalf("the run must not start: %+v", r)
		}
		// No declared type: nothing to hold the arguments to.
		wantResult(t, run(t, e, "tools/free.ts", `{"a": 5}`), "5")
	})
}

// TestResultValuesCrossFaithfullyOrSaySo: values JSON cannot hold as such
// either cross in their natural JSON form or the run says what happened
// (issue 11, item 9: a Map result became {}, NaN became null, silently).
func TestResultValuesCrossFaithfullyOrSaySo(t *testing.T) {
	ok := map[string]struct{ result, warn string }{
		`new Map([["a", 1], ["b", new Map([["c", 2]])]])`:    {`{"a":1,"b":{"c":2}}`, ""},
		`new Map([[1, "x"]])`:                                {`{"1":"x"}`, ""},
		`new Set([1, "a", 1])`:                               {`[1,"a"]`, ""},
		`{ s: new Set([new Map([["k", [new Set([1])]]])]) }`: {`{"s":[{"k":[[1]]}]}`, ""},
		`new Uint8Array([1, 2, 255])`:                        {`[1,2,255]`, ""},
		`new Date(Date.UTC(2020, 0, 2))`:                     {`"2020-01-02T00:00:00.000Z"`, ""},
		`{ a: undefined, b: [undefined] }`:                   {`{"b":[null]}`, ""},
		`undefined`:                                          {`null`, ""},
		`(() => { const e: any = new RangeError("bad"); e.code = "E"; return { e }; })()`: {`{"e":{"name":"RangeError","message":"bad","code":"E"}}`, ""},
		`{ avg: 0 / 0, list: [1, Infinity, -Infinity] }`:                                  {`{"avg":null,"list":[1,null,null]}`, "warn: result.avg is NaN, which JSON cannot hold: it was returned as null (and 2 more such values)"},
		`{ f() { return 1; }, n: 1 }`:                                                     {`{"n":1}`, "warn: result.f is a function, which JSON cannot hold: it was left out of the result"},
	}
	bad := map[string]string{
		`new Map([[{}, 1]])`:        "result: a Map whose keys are not strings or numbers has no JSON form: return Array.from(map)",
		`{ x: [2n ** 64n] }`:        "result.x[0]: the BigInt 18446744073709551616n has no JSON form: return Number(n) when it is exact as a number",
		`10n`:                       "result: the BigInt 10n has no JSON form",
		`{ p: Promise.resolve(1) }`: "result.p: a Promise has no JSON form: await it before returning",
		`() => 1`:                   "result: the tool returned a function, which has no JSON form",
		`{ w: new WeakMap() }`:      "result.w: a WeakMap or WeakSet cannot be read",
	}
	files := map[string]string{}
	name := map[string]string{}
	i := 0
	for expr := range ok {
		i++
		name[expr] = fmt.Sprintf("tools/values/ok%d.ts", i)
		files[name[expr]] = "export default async function (): Promise<any> { await tgp.list_files('tools'); return " + expr + "; }\n"
	}
	for expr := range bad {
		i++
		name[expr] = fmt.Sprintf("tools/values/bad%d.ts", i)
		files[name[expr]] = "export default function (): any { return " + expr + "; }\n"
	}
	files["tools/values/log.ts"] = "export default () => { console.log(new Map([['a', new Set([1])]]), NaN, 5n, undefined); return null; };\n"
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, files)
		for expr, want := range ok {
			r := run(t, e, name[expr], `{}`)
			if !r.Success || string(r.Result) != want.result {
				t.Errorf("return %s: got %s %+v, want %s", expr, r.Result, r.Error, want.result)
				continue
			}
			if want.warn == "" && len(r.Logs) != 0 || want.warn != "" && (len(r.Logs) != 1 || r.Logs[0] != want.warn) {
				t.Errorf("return %s: logs %q, want %q", expr, r.Logs, want.warn)
			}
		}
		for expr, want := range bad {
			wantKind(t, run(t, e, name[expr], `{}`), "exception", "the tool's result cannot be turned into JSON: TypeError: "+want)
		}
		r := run(t, e, "tools/values/log.ts", `{}`)
		if len(r.Logs) != 1 || r.Logs[0] != `{"a":[1]} NaN 5 undefined` {
			t.Errorf("logs %q", r.Logs)
		}
	})
}
