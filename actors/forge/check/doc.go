// Package check is check_tool: the static analysis of one TypeScript tool
// source before it is registered or run.
//
// Check compiles the source with the shared transpiler (package transpile,
// cached by content hash, so a checked tool costs nothing more to transpile
// when the executor runs it) and analyses it on a real syntax tree (the
// tree-sitter TypeScript grammar). Regular expressions are used only on the
// decoded value of a single string literal; every code pattern is matched
// on the tree, so comments, strings and property names never trigger code
// rules (obj.process and {process: 1} are fine, process.exit() is not).
//
// CheckDeferred, check_tool's path, leaves the transpiler off it: a source
// whose tree is clean is judged on the tree alone, and the compile errors
// only the transpiler finds are reported at the source's first exec and by
// every later check of the same content (see CheckDeferred).
//
// # Rules
//
// Each Finding carries a stable rule id. All rules are errors (the tool is
// invalid) unless marked WARNING.
//
//   - syntax: the source does not compile; the transpiler's line:column
//     diagnostics (tree-sitter's ERROR/MISSING nodes only when the
//     transpiler gave none). IMPORTANT: when the source does not compile,
//     Result.Errors holds ONLY syntax errors, because the other rules need
//     a reliable tree.
//   - no-any: the any type, anywhere.
//   - no-magic-numbers: a numeric literal whose value (hex, octal, binary,
//     separators, exponents and BigInt understood) is not in
//     Options.AllowedNumbers. -5 is a minus applied to 5: it passes when 5
//     or -5 is allowed. Literal types (type T = 3) and enum member
//     initializers are not flagged; element indexes (xs[3]) are.
//   - no-hardcoded-email: a string or template literal containing an email
//     address.
//   - no-hardcoded-secret: a literal that looks like a key or an ID (a
//     known key prefix: sk-, ghp_, github_pat_, AKIA, xoxb-/xoxp- ..., a
//     PEM private key; 24+ characters of [A-Za-z0-9_-] mixing letters and
//     digits in a value without whitespace; 32+ mixing upper case, lower
//     case and digits anywhere), or a non-empty string literal given to a
//     credential-like name (password, secret, token, apiKey, api_key,
//     accessKey ...) by a declaration, property, field, parameter default
//     or assignment.
//   - no-process: the name process as a value or a binding (process.exit(),
//     {process}, const process = ..., globalThis.process); property names
//     (obj.process, {process: 1}) and types are fine.
//   - no-host-global: a read of a global the sandbox does not define
//     (MissingGlobals: fetch, structuredClone, Intl, atob/btoa, Buffer, URL,
//     TextEncoder, window, document, setImmediate, queueMicrotask ...),
//     as an identifier or a property of globalThis, unless the file
//     declares a name of its own so called (a variable, function,
//     parameter, import or destructured name, anywhere in the file; a
//     class of that name is not recognised). SandboxGlobals lists what the
//     sandbox does define; a test in the executor keeps it exact.
//   - no-eval: eval and the Function constructor, called or referenced
//     (eval(...), (0, eval)(...), globalThis.eval, window['eval'],
//     new Function(...), Function(...)); x instanceof Function is allowed.
//   - no-dynamic-code: constructor tricks (x.constructor(...),
//     x['constructor'](...), any x.constructor.constructor), dynamic
//     import(...), setTimeout/setInterval given a string, with statements.
//   - allowed-imports: a bare module specifier (not starting with '.' or
//     '/') of an import, export ... from, import x = require(...) or
//     require(...) that is not in Options.AllowedImports; require with a
//     non-literal argument, or require used as a value. Node built-ins
//     (fs, node:fs, child_process, net, http ...) are told to use the tgp
//     bridge (tgp.read_file, tgp.write_file, tgp.list_files, tgp.fetch,
//     tgp.exec_sql).
//   - default-export (WARNING): the module has no default export (export
//     default ..., export = ..., export { x as default }). Library modules
//     that other tools require may legitimately lack one.
//   - parse-incomplete (WARNING): the source compiles but the tree-sitter
//     grammar could not parse part of it, so the analysis there may be
//     incomplete.
//
// Names are compared after decoding unicode escapes (\u0065val is eval), and
// a source that is not valid UTF-8 is a syntax error at the first bad byte
// (it never reaches the transpiler).
//
// The same rule at the same position is reported once. Errors and
// warnings are sorted by line, then column. Positions are 1-based; columns
// count bytes.
//
// # Risk
//
// Risk is computed on the tree for every source (also one that does not
// compile, on tree-sitter's best-effort tree). Each reason is a
// RiskFinding with its position; Result.Risk is the highest level found.
//
//   - critical: eval, the Function constructor, constructor tricks,
//     setTimeout/setInterval with a string; importing or requiring
//     child_process, worker_threads, vm or cluster (node: forms too);
//     string literals holding destructive commands (rm -rf, del /s, mkfs,
//     dd of=/dev/..., the :(){ :|:& };: fork bomb) or destructive SQL (DROP
//     TABLE/DATABASE/SCHEMA, TRUNCATE).
//   - high: importing fs, net, http, https, http2, dgram, tls or dns;
//     require or import() of a module chosen at run time; path traversal
//     ('../../'); hardcoded credentials (the no-hardcoded-secret rule); SQL
//     DELETE FROM or UPDATE ... SET without WHERE; obfuscation (\x escapes,
//     or \u escapes spelling printable ASCII, in string literals; unicode
//     escapes in names; atob/btoa);
//     <hidden> output markers; an @ignore-security comment.
//   - medium: process.env; tgp.fetch(...); tgp.write_file(...);
//     tgp.exec_sql(...) whose SQL writes (INSERT, UPDATE, DELETE, CREATE,
//     ALTER ...) or is not a literal; a source over 10,000 bytes; more than
//     10 string concatenations with a literal operand; a part of the source
//     the grammar could not parse.
//   - low: none of the above.
//
// High and critical tools MUST get an approval before they run; the
// checker only rates, the caller enforces.
//
// # Concurrency and cost
//
// A Checker is safe for concurrent use. The tree comes from the one
// TypeScript front end, internal/tsparse (tree-sitter's tree copied out in
// one cgo call, parsers pooled), which toolmeta's extraction shares: the
// latest sources' trees are kept by content, so a source checked for an
// exec's approval is not parsed again for its parameters. Every rule runs
// in plain Go in one pass over the tree. Checking the 250-byte
// Fibonacci tool takes about 0.06 ms of CPU when its transpile is cached
// or deferred (tree-sitter's parse dominates) and 1.1-1.3 ms when Check
// compiles it (esbuild's fixed cost per call).
package check
