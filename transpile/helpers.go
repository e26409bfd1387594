package transpile

import (
	"strings"

	"github.com/agentos-run/agentos/transpile/helpersjs"
)

// HelpersParam names the module wrapper's sixth parameter: the object of
// esbuild runtime helpers prepared once per runtime (see HelpersJS).
const HelpersParam = "__agentos_helpers"

// HelpersJS is a function expression returning the esbuild runtime helpers
// that CommonJS output uses (__export, __toCommonJS, __toESM, ...), with the
// same semantics as esbuild's, written with index loops instead of for..of.
//
// Why: every module esbuild emits defines these helpers again and runs them,
// and in goja that prelude costs ~70 µs per module load, ten times the
// tool's own code for a small tool. The sandbox evaluates HelpersJS once per
// runtime while preparing it (off the request path), and the transpiler
// rewrites each recognised helper definition into an alias of the prepared
// one (see rewriteHelpers).
//
// It lives in package helpersjs, which the sandbox worker links without
// esbuild.
const HelpersJS = helpersjs.JS

// esbuildHelpers is the exact text esbuild v0.28.2 emits for each helper
// HelpersJS provides. IMPORTANT: a helper is replaced only when its text
// matches to the byte; TestHelpersMatchEsbuild fails when an esbuild upgrade
// changes one, and until then such a helper simply stays as esbuild wrote it.
var esbuildHelpers = map[string]string{
	"__create":          "var __create = Object.create;",
	"__defProp":         "var __defProp = Object.defineProperty;",
	"__getOwnPropDesc":  "var __getOwnPropDesc = Object.getOwnPropertyDescriptor;",
	"__getOwnPropNames": "var __getOwnPropNames = Object.getOwnPropertyNames;",
	"__getProtoOf":      "var __getProtoOf = Object.getPrototypeOf;",
	"__hasOwnProp":      "var __hasOwnProp = Object.prototype.hasOwnProperty;",
	"__export":          "var __export = (target, all) => {\n  for (var name in all)\n    __defProp(target, name, { get: all[name], enumerable: true });\n};",
	"__copyProps":       "var __copyProps = (to, from, except, desc) => {\n  if (from && typeof from === \"object\" || typeof from === \"function\") {\n    for (let key of __getOwnPropNames(from))\n      if (!__hasOwnProp.call(to, key) && key !== except)\n        __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });\n  }\n  return to;\n};",
	"__reExport":        "var __reExport = (target, mod, secondTarget) => (__copyProps(target, mod, \"default\"), secondTarget && __copyProps(secondTarget, mod, \"default\"));",
	"__toESM":           "var __toESM = (mod, isNodeMode, target) => (target = mod != null ? __create(__getProtoOf(mod)) : {}, __copyProps(\n  // If the importer is in node compatibility mode or this is not an ESM\n  // file that has been converted to a CommonJS file using a Babel-\n  // compatible transform (i.e. \"__esModule\" has not been set), then set\n  // \"default\" to the CommonJS \"module.exports\" for node compatibility.\n  isNodeMode || !mod || !mod.__esModule ? __defProp(target, \"default\", { value: mod, enumerable: true }) : target,\n  mod\n));",
	"__toCommonJS":      "var __toCommonJS = (mod) => __copyProps(__defProp({}, \"__esModule\", { value: true }), mod);",
}

// rewriteHelpers replaces the recognised helper definitions at the top of a
// module body (after the wrapper line) with aliases of the prepared helpers,
// padding with empty lines so that every later line keeps its number and the
// source map stays exact. It returns the body and how many it replaced.
func rewriteHelpers(js string) (string, int) {
	lines := strings.Split(js, "\n")
	replaced := 0
	for i := 1; i < len(lines); {
		name, ok := strings.CutPrefix(lines[i], "var ")
		if !ok {
			break
		}
		name, _, _ = strings.Cut(name, " ")
		text, known := esbuildHelpers[name]
		n := strings.Count(text, "\n") + 1
		if !known || i+n > len(lines) || strings.Join(lines[i:i+n], "\n") != text {
			break // the prelude ends at the first statement that is not a known helper
		}
		lines[i] = "var " + name + " = " + HelpersParam + "." + name + ";"
		for k := i + 1; k < i+n; k++ {
			lines[k] = ""
		}
		i += n
		replaced++
	}
	return strings.Join(lines, "\n"), replaced
}
