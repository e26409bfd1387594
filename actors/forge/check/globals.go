package check

import "slices"

// ruleNoHostGlobal flags a global a tool reads that the sandbox does not
// define (browser, Node and newer ECMAScript globals goja lacks): at run
// time it would be a ReferenceError.
const ruleNoHostGlobal = "no-host-global"

// SandboxGlobals are the own properties of the sandbox's global object, as
// a tool sees them (sorted): goja's ECMAScript built-ins, the tgp bridge,
// console and the timers. Besides these, each module has require, module,
// exports, __filename and __dirname in scope. IMPORTANT: a test in the
// executor package compares this list with the real sandbox; change both
// together.
var SandboxGlobals = []string{
	"AggregateError", "Array", "ArrayBuffer", "BigInt", "BigInt64Array", "BigUint64Array", "Boolean",
	"DataView", "Date", "Error", "EvalError", "Float32Array", "Float64Array", "Function", "GoError",
	"Infinity", "Int16Array", "Int32Array", "Int8Array", "JSON", "Map", "Math", "NaN", "Number", "Object",
	"Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set", "String", "Symbol",
	"SyntaxError", "TypeError", "URIError", "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray",
	"WeakMap", "WeakSet", "clearInterval", "clearTimeout", "console", "decodeURI", "decodeURIComponent",
	"encodeURI", "encodeURIComponent", "escape", "eval", "globalThis", "isFinite", "isNaN", "parseFloat",
	"parseInt", "setInterval", "setTimeout", "tgp", "undefined", "unescape",
}

// MissingGlobals are globals of browsers, Node or newer ECMAScript that
// tools commonly reach for and the sandbox does NOT define, each with what
// to write instead. check flags a read of one (unless the file declares a
// name of its own so called) as an error of rule no-host-global. None of
// them is in SandboxGlobals (a test keeps it so).
var MissingGlobals = map[string]string{
	"process":                 "read inputs from args (the tool's parameter) and reach the outside only through tgp",
	"Buffer":                  "work with strings, or Uint8Array for bytes",
	"global":                  "there is no Node global object: use globalThis",
	"window":                  "there is no browser window: use globalThis",
	"self":                    "there is no browser global object: use globalThis",
	"document":                "there is no DOM in the sandbox",
	"navigator":               "there is no browser in the sandbox",
	"location":                "there is no browser in the sandbox",
	"localStorage":            "keep state in files with tgp.write_file / tgp.read_file",
	"sessionStorage":          "keep state in files with tgp.write_file / tgp.read_file",
	"alert":                   "log with console.log",
	"fetch":                   "call tgp.fetch(url, init)",
	"XMLHttpRequest":          "call tgp.fetch(url, init)",
	"WebSocket":               "the sandbox has no sockets: call tgp.fetch for HTTP",
	"Request":                 "call tgp.fetch(url, init) with a plain init object",
	"Response":                "tgp.fetch answers a plain object",
	"Headers":                 "pass headers as a plain object to tgp.fetch",
	"FormData":                "send a JSON or URL-encoded body with tgp.fetch",
	"Blob":                    "work with strings or Uint8Array",
	"File":                    "read files with tgp.read_file",
	"URL":                     "parse the URL with string functions or a regular expression",
	"URLSearchParams":         "build the query with encodeURIComponent",
	"TextEncoder":             "work with strings, or encode UTF-8 by hand into a Uint8Array",
	"TextDecoder":             "work with strings",
	"AbortController":         "the run's timeout bounds every call",
	"AbortSignal":             "the run's timeout bounds every call",
	"Event":                   "there are no DOM events in the sandbox",
	"EventTarget":             "there are no DOM events in the sandbox",
	"crypto":                  "there is no crypto API: use Math.random for non-secret randomness",
	"performance":             "measure time with Date.now()",
	"structuredClone":         "copy plain data with JSON.parse(JSON.stringify(value))",
	"queueMicrotask":          "use Promise.resolve().then(fn)",
	"setImmediate":            "use setTimeout(fn, 0)",
	"clearImmediate":          "use setTimeout and clearTimeout",
	"requestAnimationFrame":   "use setTimeout",
	"atob":                    "decode base64 by hand (there is no atob in the sandbox)",
	"btoa":                    "encode base64 by hand (there is no btoa in the sandbox)",
	"Intl":                    "format numbers and dates by hand (toFixed, toISOString)",
	"WeakRef":                 "hold the object directly, or use a WeakMap",
	"FinalizationRegistry":    "release resources explicitly",
	"Atomics":                 "the sandbox runs one thread",
	"SharedArrayBuffer":       "use ArrayBuffer",
	"WebAssembly":             "write the logic in TypeScript",
	"Worker":                  "the sandbox runs one thread",
	"importScripts":           "require other tools with require('./x') or import",
	"__non_webpack_require__": "require other tools with require('./x') or import",
}

// isSandboxGlobal reports whether name is a global of the sandbox.
func isSandboxGlobal(name string) bool {
	_, ok := slices.BinarySearch(SandboxGlobals, name)
	return ok
}

// declaredNames collects the names the file declares anywhere (variables,
// functions, parameters, imports, destructured names, catch parameters):
// such a name shadows a global of the same name, so reading it is fine.
// Scopes are not told apart: a name declared anywhere is taken as declared
// everywhere, which can only miss a finding, never invent one.
func (a *analyzer) declaredNames() map[string]bool {
	var out map[string]bool
	for i := range a.t.nodes {
		if !a.declares(int32(i)) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[a.name(int32(i))] = true
	}
	return out
}

// declaringFields are the fields in which an identifier child of a node of
// the kind declares a name (const x, (x: T), x => ...).
var declaringFields = map[kind]field{
	kVariableDeclarator: fName, kRequiredParameter: fPattern, kOptionalParameter: fPattern, kArrowFunction: fParameter,
}

// declares reports whether node i declares the name it spells: a shorthand
// pattern ({a} = ...), or an identifier a declaring node holds.
func (a *analyzer) declares(i int32) bool {
	n := a.n(i)
	if n.kind == kShorthandPattern {
		return true
	}
	if n.kind != kIdentifier || n.parent < 0 {
		return false
	}
	pk := a.n(n.parent).kind
	if pk == kDeclares {
		return true
	}
	f, ok := declaringFields[pk]
	return ok && n.field == f
}

// hostGlobal reports a read, at node i, of a global the sandbox lacks.
func (a *analyzer) hostGlobal(i int32, name string) {
	hint, ok := MissingGlobals[name]
	if !ok || name == "process" || a.declared[name] {
		return // process has its own rule (no-process)
	}
	a.errorAt(a.n(i).start, ruleNoHostGlobal,
		"'"+name+"' does not exist in the agentos sandbox (it has the ECMAScript built-ins, tgp, console, setTimeout/setInterval and require): "+hint)
}
