package check

import (
	"slices"
	"testing"
)

// TestHostGlobalsAreFlagged: a tool that reads a global the sandbox does
// not have is invalid, with the position of the read (issue 11, item 10:
// a tool using setTimeout, absent then, was called valid and failed with
// a ReferenceError at run time; structuredClone, Intl, fetch ... still
// would).
func TestHostGlobalsAreFlagged(t *testing.T) {
	runCases(t, []checkCase{
		{name: "structuredClone", src: tool("  return structuredClone(args);"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "fetch", src: tool("  return fetch(args.s);"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "Intl", src: tool("  return new Intl.NumberFormat('en').format(1);"), errors: []at{{ruleNoHostGlobal, 2, 14}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "window", src: tool("  return window.location;"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "document", src: tool("  return document.title;"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "setImmediate", src: tool("  setImmediate(() => 0);\n  return 0;"), errors: []at{{ruleNoHostGlobal, 2, 3}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "queueMicrotask", src: tool("  queueMicrotask(() => 0);\n  return 0;"), errors: []at{{ruleNoHostGlobal, 2, 3}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "btoa", src: tool("  return btoa(args.s);"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskHigh},
		{name: "globalThis.fetch", src: tool("  return globalThis.fetch;"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "shorthand", src: tool("  return { URL };"), errors: []at{{ruleNoHostGlobal, 2, 12}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
		{name: "Buffer", src: tool("  return Buffer.from(args.s).length;"), errors: []at{{ruleNoHostGlobal, 2, 10}}, onlyRules: []string{ruleNoHostGlobal}, risk: RiskLow},
	})
	// What the sandbox has, names the file declares itself, and types are
	// fine.
	runCases(t, []checkCase{
		{name: "timers", src: tool("  const id = setTimeout(() => 0, 1);\n  clearTimeout(id);\n  const iv = setInterval(() => 0, 1);\n  clearInterval(iv);\n  return 0;"), valid: true, risk: RiskLow},
		{name: "declared const", src: tool("  const fetch = (u: string) => u;\n  return fetch(args.s);"), valid: true, risk: RiskLow},
		{name: "declared function", src: "function structuredClone<T>(v: T): T { return v; }\nexport default (a: { s: string }) => structuredClone(a);\n", valid: true, risk: RiskLow},
		{name: "destructured", src: tool("  const { fetch } = tgp as { fetch: (u: string) => unknown };\n  return fetch(args.s);"), valid: true, risk: RiskLow},
		{name: "import", src: "import { URL } from './url';\nexport default (a: { s: string }) => URL(a.s);\n", valid: true, risk: RiskLow},
		{name: "parameter", src: "export default (a: { s: string }, fetch?: (u: string) => string) => fetch ? fetch(a.s) : a.s;\n", valid: true, risk: RiskLow},
		{name: "arrow parameter", src: tool("  const f = (document: unknown) => document;\n  return f(args.s);"), valid: true, risk: RiskLow},
		{name: "catch", src: tool("  try { return 1; } catch (crypto) { return crypto; }"), valid: true, risk: RiskLow},
		{name: "type only", src: "type R = Response;\nexport default (a: { s: string }): R | null => null;\n", valid: true, risk: RiskLow},
		{name: "property", src: tool("  const o = { fetch: 1, window: 2 };\n  return o.fetch + o.window;"), valid: true, risk: RiskLow},
	})
}

// TestGlobalListsAreConsistent: the flagged names are never globals of the
// sandbox, and SandboxGlobals stays sorted (it is searched).
func TestGlobalListsAreConsistent(t *testing.T) {
	if !slices.IsSorted(SandboxGlobals) {
		t.Fatal("SandboxGlobals must stay sorted")
	}
	for name := range MissingGlobals {
		if isSandboxGlobal(name) {
			t.Errorf("%s is both a sandbox global and flagged as missing", name)
		}
	}
}
