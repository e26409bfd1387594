package check

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentos-run/agentos/internal/tsparse"
)

// Rule ids.
const (
	ruleSyntax          = "syntax"
	ruleNoAny           = "no-any"
	ruleMagicNumbers    = "no-magic-numbers"
	ruleEmail           = "no-hardcoded-email"
	ruleSecret          = "no-hardcoded-secret"
	ruleNoProcess       = "no-process"
	ruleNoEval          = "no-eval"
	ruleDynamicCode     = "no-dynamic-code"
	ruleAllowedImports  = "allowed-imports"
	ruleDefaultExport   = "default-export"
	ruleParseIncomplete = "parse-incomplete"
	ruleMarkdownFence   = "markdown-fence"
)

// RuleDefaultExport names the warning of a module without a default
// export: a library module MAY have none, a tool MUST (the forge treats it
// as an error, since what it forges are tools).
const RuleDefaultExport = ruleDefaultExport

const requireAsValue = "'require' may only be called directly, as require('./lib/x'): a require passed around as a value cannot be checked"

// Thresholds of the medium risks.
const (
	maxQuietSize    = 10000 // bytes of source
	maxQuietConcats = 10    // string concatenations with a literal operand
)

// analyzer runs every rule and risk probe over one flattened tree in a
// single pre-order pass.
type analyzer struct {
	c    *Checker
	src  []byte
	t    *tree
	lint bool // false when the source does not compile: risks only

	errs  []Finding
	warns []Finding
	risks []RiskFinding

	hasDefault bool
	declared   map[string]bool // names the file declares (see declaredNames)
	concats    int
	concatAt   uint32
	modules    []string // the literal module specifiers (Result.Modules)
}

func (a *analyzer) n(i int32) *node { return &a.t.nodes[i] }

// text returns the source bytes of node i (no copy).
func (a *analyzer) text(i int32) []byte {
	n := a.n(i)
	return a.src[n.start:n.end]
}

// name returns the name an identifier-like node spells, with \uXXXX and
// \u{X} escapes decoded (\u0065val is eval).
func (a *analyzer) name(i int32) string {
	t := a.text(i)
	if bytes.IndexByte(t, '\\') < 0 {
		return string(t)
	}
	return decodeIdentifier(t)
}

// is reports whether identifier-like node i spells s.
func (a *analyzer) is(i int32, s string) bool {
	if i < 0 {
		return false
	}
	t := a.text(i)
	if bytes.IndexByte(t, '\\') < 0 {
		return string(t) == s
	}
	return decodeIdentifier(t) == s
}

// decodeIdentifier decodes the unicode escapes of an identifier.
func decodeIdentifier(t []byte) string {
	var b strings.Builder
	for k := 0; k < len(t); {
		if t[k] != '\\' || k+1 >= len(t) || t[k+1] != 'u' {
			b.WriteByte(t[k])
			k++
			continue
		}
		j := k + 2
		var hex []byte
		if j < len(t) && t[j] == '{' {
			e := bytes.IndexByte(t[j:], '}')
			if e < 0 {
				b.Write(t[k:])
				break
			}
			hex, j = t[j+1:j+e], j+e+1
		} else {
			hex = t[j:min(j+4, len(t))]
			j += len(hex)
		}
		v, err := strconv.ParseUint(string(hex), 16, 32)
		if err != nil || v > unicode.MaxRune {
			b.Write(t[k:j])
		} else {
			b.WriteRune(rune(v))
		}
		k = j
	}
	return b.String()
}

func (a *analyzer) report(sev Severity, at uint32, rule, msg string) {
	if !a.lint {
		return
	}
	line, col := a.t.pos(at)
	f := Finding{Line: line, Column: col, Rule: rule, Message: msg, Severity: sev}
	if sev == SeverityWarning {
		a.warns = append(a.warns, f)
	} else {
		a.errs = append(a.errs, f)
	}
}

func (a *analyzer) errorAt(at uint32, rule, msg string) { a.report(SeverityError, at, rule, msg) }

func (a *analyzer) risk(level Risk, at uint32, reason string) {
	line, col := a.t.pos(at)
	a.risks = append(a.risks, RiskFinding{Level: level, Reason: reason, Line: line, Column: col})
}

// child returns the first child of i filling field f, or -1.
func (a *analyzer) child(i int32, f field) int32 {
	for c := a.n(i).first; c >= 0; c = a.n(c).next {
		if a.n(c).field == f {
			return c
		}
	}
	return -1
}

// firstNamed returns the first named child of i, or -1.
func (a *analyzer) firstNamed(i int32) int32 {
	for c := a.n(i).first; c >= 0; c = a.n(c).next {
		if a.n(c).named && a.n(c).kind != kComment {
			return c
		}
	}
	return -1
}

// lastNamed returns the last named child of i, or -1.
func (a *analyzer) lastNamed(i int32) int32 {
	last := int32(-1)
	for c := a.n(i).first; c >= 0; c = a.n(c).next {
		if a.n(c).named && a.n(c).kind != kComment {
			last = c
		}
	}
	return last
}

// hasToken reports whether i has an anonymous child of kind k.
func (a *analyzer) hasToken(i int32, k kind) bool {
	for c := a.n(i).first; c >= 0; c = a.n(c).next {
		if !a.n(c).named && a.n(c).kind == k {
			return true
		}
	}
	return false
}

// unwrap looks through the wrappers that keep a value's identity:
// parentheses, the last operand of a comma sequence ((0, eval)), type
// assertions (x as T, x satisfies T, x!).
func (a *analyzer) unwrap(i int32) int32 {
	for i >= 0 {
		switch a.n(i).kind {
		case kParenExpr, kAsExpr, kSatisfiesExpr, kNonNullExpr:
			i = a.firstNamed(i)
		case kSequenceExpr:
			i = a.lastNamed(i)
		default:
			return i
		}
	}
	return i
}

// wrapped climbs from i through the parents that unwrap looks through and
// returns the outermost one (i itself when it is not wrapped).
func (a *analyzer) wrapped(i int32) int32 {
	for {
		p := a.n(i).parent
		if p < 0 {
			return i
		}
		switch a.n(p).kind {
		case kParenExpr, kAsExpr, kSatisfiesExpr, kNonNullExpr:
			if a.firstNamed(p) != i {
				return i
			}
		case kSequenceExpr:
			if a.lastNamed(p) != i {
				return i
			}
		default:
			return i
		}
		i = p
	}
}

// usedBy returns the outermost wrapper w of the value i (see wrapped) and
// the node p that uses it (-1 at the top).
func (a *analyzer) usedBy(i int32) (w, p int32) {
	w = a.wrapped(i)
	return w, a.n(w).parent
}

// isCallee reports whether the value i is what a call or a new expression
// invokes.
func (a *analyzer) isCallee(i int32) bool {
	w, p := a.usedBy(i)
	if p < 0 {
		return false
	}
	switch a.n(p).kind {
	case kCallExpr:
		return a.n(w).field == fFunction
	case kNewExpr:
		return a.n(w).field == fConstructor
	}
	return false
}

// callOf returns the call_expression that invokes i, or -1.
func (a *analyzer) callOf(i int32) int32 {
	w := a.wrapped(i)
	p := a.n(w).parent
	if p >= 0 && a.n(p).kind == kCallExpr && a.n(w).field == fFunction {
		return p
	}
	return -1
}

// firstArg returns the first argument of call or new expression i, or -1.
func (a *analyzer) firstArg(call int32) int32 {
	args := a.child(call, fArguments)
	if args < 0 {
		return -1
	}
	return a.firstNamed(args)
}

// literal returns the value of a string literal or a template literal
// without substitutions, decoded. ok is false for anything else.
func (a *analyzer) literal(i int32) (string, bool) {
	if i < 0 {
		return "", false
	}
	switch a.n(i).kind {
	case kString:
	case kTemplateString:
		if a.hasSubstitution(i) {
			return "", false
		}
	default:
		return "", false
	}
	v := a.decode(i)
	return string(v.text), true
}

func (a *analyzer) hasSubstitution(i int32) bool {
	for c := a.n(i).first; c >= 0; c = a.n(c).next {
		if a.n(c).kind == kTemplateSubstitution {
			return true
		}
	}
	return false
}

// propName returns the property a member or subscript expression reads
// when it is known statically (x.p, x['p'], x[`p`]).
func (a *analyzer) propName(i int32) (string, bool) {
	switch a.n(i).kind {
	case kMemberExpr:
		p := a.child(i, fProperty)
		if p < 0 {
			return "", false
		}
		return a.name(p), true
	case kSubscriptExpr:
		return a.literal(a.unwrap(a.child(i, fIndex)))
	}
	return "", false
}

var globalObjects = map[string]bool{"globalThis": true, "window": true, "self": true, "global": true}

// globalName returns the name of the global that i denotes: an identifier
// (eval), or a global object's property (globalThis.eval, window['eval']).
func (a *analyzer) globalName(i int32) (string, bool) {
	i = a.unwrap(i)
	if i < 0 {
		return "", false
	}
	switch a.n(i).kind {
	case kIdentifier:
		return a.name(i), true
	case kMemberExpr, kSubscriptExpr:
		obj := a.unwrap(a.child(i, fObject))
		if obj < 0 || a.n(obj).kind != kIdentifier || !globalObjects[a.name(obj)] {
			return "", false
		}
		return a.propName(i)
	}
	return "", false
}

// inType reports whether node i is part of a type, which the compiler
// erases: nothing in it runs.
func (a *analyzer) inType(i int32) bool { return a.n(i).inType }

// visitors are the rules of the single pass, by the kind of node they
// look at (nil: none).
var visitors = [numKinds]func(a *analyzer, i int32){
	kIdentifier:                  (*analyzer).identifier, // {process} reads process too
	kShorthandPropertyIdentifier: (*analyzer).identifier,
	kMemberExpr:                  (*analyzer).member,
	kSubscriptExpr:               (*analyzer).member,
	kCallExpr:                    (*analyzer).call,
	kPropertyIdentifier:          (*analyzer).escapedName,
	kPredefinedType:              (*analyzer).predefinedType,
	kNumber:                      (*analyzer).number,
	kString:                      (*analyzer).stringLiteral,
	kTemplateString:              (*analyzer).stringLiteral,
	kComment:                     (*analyzer).comment,
	kWithStatement:               (*analyzer).withStatement,
	kImportStatement:             (*analyzer).moduleStatement,
	kExportStatement:             (*analyzer).moduleStatement,
	kImportRequireClause:         (*analyzer).moduleStatement,
	kExportSpecifier:             (*analyzer).exportSpecifier,
	kBinaryExpr:                  (*analyzer).binary,
	kAugmentedAssign:             (*analyzer).augmentedAssign,
	kVariableDeclarator:          func(a *analyzer, i int32) { a.namedSecret(a.child(i, fName), a.child(i, fValue)) },
	kPair:                        func(a *analyzer, i int32) { a.namedSecret(a.child(i, fKey), a.child(i, fValue)) },
	kPublicFieldDefinition:       func(a *analyzer, i int32) { a.namedSecret(a.child(i, fName), a.child(i, fValue)) },
	kRequiredParameter:           func(a *analyzer, i int32) { a.namedSecret(a.child(i, fPattern), a.child(i, fValue)) },
	kOptionalParameter:           func(a *analyzer, i int32) { a.namedSecret(a.child(i, fPattern), a.child(i, fValue)) },
	kAssignment:                  (*analyzer).assignment,
}

// run is the single pass over the tree (visitors), then the rules on the
// whole source.
func (a *analyzer) run() {
	nodes := a.t.nodes
	a.declared = a.declaredNames()
	for i := int32(0); int(i) < len(nodes); i++ {
		if v := visitors[nodes[i].kind]; v != nil {
			v(a, i)
		}
	}
	a.wholeSource()
}

func (a *analyzer) escapedName(i int32) {
	if bytes.IndexByte(a.text(i), '\\') >= 0 {
		a.risk(RiskHigh, a.n(i).start, "unicode escapes in a name hide which name it is")
	}
}

func (a *analyzer) predefinedType(i int32) {
	if a.is(i, "any") {
		a.errorAt(a.n(i).start, ruleNoAny,
			"'any' turns off type checking: use 'unknown' and narrow it, or write the specific type")
	}
}

func (a *analyzer) comment(i int32) {
	if bytes.Contains(a.text(i), []byte("@ignore-security")) {
		a.risk(RiskHigh, a.n(i).start, "a @ignore-security comment asks reviewers and scanners to look away")
	}
}

func (a *analyzer) withStatement(i int32) {
	a.errorAt(a.n(i).start, ruleDynamicCode,
		"'with' makes every name ambiguous and is forbidden: name the object's properties explicitly (obj.x)")
}

// moduleStatement checks an import's or export's module specifier and
// notes a default export.
func (a *analyzer) moduleStatement(i int32) {
	if s := a.child(i, fSource); s >= 0 {
		a.specifier(s)
	}
	if a.n(i).kind == kExportStatement && (a.hasToken(i, tDefault) || a.hasToken(i, tEq)) {
		a.hasDefault = true
	}
}

func (a *analyzer) exportSpecifier(i int32) {
	name := a.child(i, fAlias)
	if name < 0 {
		name = a.child(i, fName)
	}
	if a.is(name, "default") {
		a.hasDefault = true
	}
}

func (a *analyzer) binary(i int32) {
	if a.hasToken(i, tPlus) && (a.isStringy(a.child(i, fLeft)) || a.isStringy(a.child(i, fRight))) {
		a.concat(i)
	}
}

func (a *analyzer) augmentedAssign(i int32) {
	if a.hasToken(i, tPlusEq) && a.isStringy(a.child(i, fRight)) {
		a.concat(i)
	}
}

func (a *analyzer) assignment(i int32) {
	left := a.child(i, fLeft)
	if left >= 0 && a.n(left).kind == kMemberExpr {
		left = a.child(left, fProperty)
	}
	a.namedSecret(left, a.child(i, fRight))
}

// wholeSource are the rules on the whole source: its size, its
// concatenations, a part the grammar could not parse, a Markdown fence,
// the default export.
func (a *analyzer) wholeSource() {
	a.reviewRisks()
	if a.lint {
		a.lintWhole()
	}
}

// reviewRisks rates what makes the source hard to review: its size and
// its string building.
func (a *analyzer) reviewRisks() {
	if len(a.src) > maxQuietSize {
		a.risk(RiskMedium, 0, "the source is "+strconv.Itoa(len(a.src))+" bytes long (over "+
			strconv.Itoa(maxQuietSize)+"): too large to review by eye")
	}
	if a.concats > maxQuietConcats {
		a.risk(RiskMedium, a.concatAt, strconv.Itoa(a.concats)+" string concatenations with literals (over "+
			strconv.Itoa(maxQuietConcats)+") can assemble hidden code or commands")
	}
}

// lintWhole reports what is wrong with the source as a whole: a part the
// grammar could not parse, a Markdown fence, no default export.
func (a *analyzer) lintWhole() {
	if a.t.hasError {
		if at, ok := a.firstTreeError(); ok {
			a.report(SeverityWarning, at, ruleParseIncomplete,
				"the checker's TypeScript grammar could not parse this part, so the analysis here may be incomplete: prefer plainer syntax")
			a.risk(RiskMedium, at, "part of the source could not be analysed")
		}
	}
	if bytes.HasPrefix(bytes.TrimLeft(a.src, " \t\r\n\ufeff"), []byte("```")) {
		// It compiles (a tagged template literal), and would fail at run time.
		a.errorAt(0, ruleMarkdownFence,
			"the source starts with a Markdown code fence (```): save or submit the TypeScript alone, without the fence lines")
	}
	if !a.hasDefault {
		a.report(SeverityWarning, 0, ruleDefaultExport,
			"the module has no default export: a tool MUST `export default function (args) { ... }` to be runnable (a library module that other tools require may ignore this)")
	}
}

func (a *analyzer) isStringy(i int32) bool {
	i = a.unwrap(i)
	return i >= 0 && (a.n(i).kind == kString || a.n(i).kind == kTemplateString)
}

func (a *analyzer) concat(i int32) {
	a.concats++
	if a.concats == maxQuietConcats+1 {
		a.concatAt = a.n(i).start
	}
}

// identifier handles value references to forbidden globals.
func (a *analyzer) identifier(i int32) {
	if bytes.IndexByte(a.text(i), '\\') >= 0 {
		a.risk(RiskHigh, a.n(i).start, "unicode escapes in a name hide which name it is")
	}
	name := a.name(i)
	if _, missing := MissingGlobals[name]; missing && !a.inType(i) {
		a.hostGlobal(i, name)
	}
	if dangerousNames[name] && !a.inType(i) { // typeof process in a type only names a type
		a.dangerousName(i, name)
	}
}

// dangerousNames are the globals whose every use the rules judge.
var dangerousNames = map[string]bool{"process": true, "eval": true, "Function": true, "require": true, "atob": true, "btoa": true}

// dangerousName judges the use at node i of one of the dangerousNames.
func (a *analyzer) dangerousName(i int32, name string) {
	n := a.n(i)
	switch name {
	case "process":
		a.process(i)
	case "eval":
		a.eval(i, "eval")
	case "Function":
		if p := n.parent; p >= 0 && a.n(p).kind == kBinaryExpr && n.field == fRight && a.hasToken(p, tInstanceof) {
			return // x instanceof Function only tests a value
		}
		a.eval(i, "Function")
	case "require":
		a.requireUse(i)
	case "atob", "btoa":
		a.risk(RiskHigh, n.start, "base64 encoding ("+name+") is a common way to hide code or data")
	}
}

// requireUse judges the name require at node i used other than as a
// callee (checked with its call) or in import x = require(...).
func (a *analyzer) requireUse(i int32) {
	if a.n(a.wrapped(i)).field == fFunction && a.callOf(i) >= 0 {
		return // checked with its call
	}
	if p := a.n(i).parent; p >= 0 && a.n(p).kind == kImportRequireClause {
		return
	}
	a.errorAt(a.n(i).start, ruleAllowedImports, requireAsValue)
	a.risk(RiskHigh, a.n(i).start, "require used as a value (aliased or passed around) loads modules the checker cannot see")
}

// process reports a use of the process global (identifier or
// globalThis.process) at node i.
func (a *analyzer) process(i int32) {
	a.errorAt(a.n(i).start, ruleNoProcess,
		"'process' does not exist in the sandbox: read inputs from args (the tool's parameter) and reach the outside only through tgp")
	w := a.wrapped(i)
	if p := a.n(w).parent; p >= 0 && a.n(w).field == fObject {
		if prop, ok := a.propName(p); ok && prop == "env" {
			a.risk(RiskMedium, a.n(p).start, "reads environment variables (process.env)")
		}
	}
}

func (a *analyzer) eval(i int32, name string) {
	at := a.n(i).start
	if name == "eval" {
		a.errorAt(at, ruleNoEval,
			"eval runs code from a string and is forbidden: write the code itself, or parse data with JSON.parse")
		a.risk(RiskCritical, at, "eval runs arbitrary code")
		return
	}
	a.errorAt(at, ruleNoEval,
		"the Function constructor compiles code from a string and is forbidden: write the function in the tool's source")
	a.risk(RiskCritical, at, "the Function constructor runs arbitrary code")
}

// member handles property reads: global object properties, constructor
// tricks.
func (a *analyzer) member(i int32) {
	prop, ok := a.propName(i)
	if !ok {
		return
	}
	obj := a.unwrap(a.child(i, fObject))
	if obj >= 0 && a.n(obj).kind == kIdentifier && globalObjects[a.name(obj)] {
		if !a.inType(i) {
			a.globalMember(i, a.name(obj), prop)
		}
		return
	}
	if prop == "constructor" {
		a.constructorUse(i, obj)
	}
}

// globalMember judges the member prop of the global object named obj
// (globalThis.eval, window.process ...), at node i.
func (a *analyzer) globalMember(i int32, obj, prop string) {
	if _, missing := MissingGlobals[prop]; missing && obj == "globalThis" && prop != "process" {
		a.errorAt(a.n(i).start, ruleNoHostGlobal, "'globalThis."+prop+"' does not exist in the agentos sandbox: "+MissingGlobals[prop])
	}
	switch prop {
	case "process":
		a.process(i)
	case "eval", "Function":
		a.eval(i, prop)
	case "atob", "btoa":
		a.risk(RiskHigh, a.n(i).start, "base64 encoding ("+prop+") is a common way to hide code or data")
	case "require":
		a.errorAt(a.n(i).start, ruleAllowedImports, requireAsValue)
	}
}

// constructorUse judges x.constructor at node i (obj is x): calling it or
// passing it on reaches the Function constructor.
func (a *analyzer) constructorUse(i, obj int32) {
	chained := false
	if obj >= 0 && (a.n(obj).kind == kMemberExpr || a.n(obj).kind == kSubscriptExpr) {
		p, ok := a.propName(obj)
		chained = ok && p == "constructor"
	}
	if !chained && !a.isCallee(i) && a.constructorStaysPut(i) {
		return // reading x.constructor.name, or comparing it, is harmless
	}
	at := a.n(i).start
	a.errorAt(at, ruleDynamicCode,
		"using a value's .constructor (calling it, or passing it on) reaches the Function constructor (code from a string) and is forbidden: call the function you need directly; reading .constructor.name or comparing it is fine")
	a.risk(RiskCritical, at, "a .constructor trick can reach the Function constructor and run arbitrary code")
}

// constructorStaysPut reports whether the value of x.constructor at i is
// used only where it cannot be called later: as the object of a further
// property read (x.constructor.name) or as an operand of a comparison
// (x.constructor === Foo). Anything else (assigned, passed, returned,
// spread) lets the Function constructor escape, e.g.
// const F = (() => 0).constructor; F('code')().
func (a *analyzer) constructorStaysPut(i int32) bool {
	w, p := a.usedBy(i)
	if p < 0 {
		return false
	}
	switch a.n(p).kind {
	case kMemberExpr:
		return a.n(w).field == fObject
	case kBinaryExpr:
		// The operator token carries no position: read it from the source
		// around the operand. Logical operators (||, &&, ??) are not
		// comparisons: they pass the constructor itself on.
		full, pn, wn := a.text(p), a.n(p), a.n(w)
		var op string
		if a.n(w).field == fLeft {
			op = strings.TrimSpace(string(full[wn.end-pn.start:]))
		} else {
			op = strings.TrimSpace(string(full[:wn.start-pn.start]))
			op = op[strings.LastIndexAny(op, " \t\n)")+1:]
		}
		for _, cmp := range []string{"===", "!==", "==", "!=", "instanceof"} {
			if strings.HasPrefix(op, cmp) || strings.HasSuffix(op, cmp) {
				return true
			}
		}
	}
	return false
}

// call handles calls whose callee decides the rule: dynamic import,
// require, timers with code strings, the tgp bridge.
func (a *analyzer) call(i int32) {
	fn := a.unwrap(a.child(i, fFunction))
	if fn < 0 {
		return
	}
	if a.n(fn).kind == kImport {
		a.dynamicImport(i)
		return
	}
	if name, ok := a.globalName(fn); ok && a.globalCall(i, fn, name) {
		return
	}
	if a.n(fn).kind == kMemberExpr {
		a.bridgeCall(i, fn)
	}
}

// dynamicImport judges the import(...) call i.
func (a *analyzer) dynamicImport(i int32) {
	if a.inType(i) {
		return // import('./x').T names a type
	}
	at := a.n(i).start
	a.errorAt(at, ruleDynamicCode,
		"dynamic import() is forbidden: import the module statically at the top of the file (import x from './lib/x')")
	arg := a.firstArg(i)
	if arg < 0 {
		return
	}
	if _, ok := a.literal(arg); ok {
		a.specifier(arg)
	} else {
		a.risk(RiskHigh, at, "dynamic import() of a module chosen at run time")
	}
}

// globalCall judges the call i of the global name (the callee fn): require
// and the timers that take code. It reports whether the call was judged.
func (a *analyzer) globalCall(i, fn int32, name string) bool {
	switch name {
	case "require":
		if a.n(fn).kind != kIdentifier {
			return false
		}
		a.require(i)
		return true
	case "setTimeout", "setInterval":
		if arg := a.firstArg(i); arg >= 0 && a.isCode(arg) {
			a.errorAt(a.n(arg).start, ruleDynamicCode,
				name+" with a string evaluates it as code and is forbidden: pass a function instead ("+name+"(() => { ... }, ms))")
			a.risk(RiskCritical, a.n(arg).start, name+" with a string runs arbitrary code")
		}
		return true
	}
	return false
}

// require judges the require(...) call i: its module must be a literal.
func (a *analyzer) require(i int32) {
	arg := a.firstArg(i)
	if _, ok := a.literal(arg); ok {
		a.specifier(arg)
		return
	}
	at := a.n(i).start
	a.errorAt(at, ruleAllowedImports,
		"require() needs a string literal naming the module, as require('./lib/x'): a module chosen at run time cannot be checked")
	a.risk(RiskHigh, at, "require() of a module chosen at run time")
}

// bridgeRisks are the medium risks of the sanctioned bridge's calls
// (tgp.x(...)), by method; exec_sql is judged by its SQL.
var bridgeRisks = map[string]string{
	"fetch":             "reaches the network (tgp.fetch)",
	"write_file":        "writes files (tgp.write_file)",
	"mcp_call":          "calls an MCP server's tool (tgp.mcp_call)",
	"mcp_read_resource": "reads from an MCP server (tgp.mcp_read_resource)",
	"mcp_get_prompt":    "reads from an MCP server (tgp.mcp_get_prompt)",
}

// bridgeCall rates the call i of the member expression fn when it calls
// the bridge (tgp.fetch(...) ...).
func (a *analyzer) bridgeCall(i, fn int32) {
	obj := a.unwrap(a.child(fn, fObject))
	if obj < 0 || a.n(obj).kind != kIdentifier || !a.is(obj, "tgp") {
		return
	}
	at := a.n(i).start
	prop, _ := a.propName(fn)
	if reason, ok := bridgeRisks[prop]; ok {
		a.risk(RiskMedium, at, reason)
		return
	}
	if prop != "exec_sql" {
		return
	}
	if sql, ok := a.sqlText(a.firstArg(i)); !ok {
		a.risk(RiskMedium, at, "runs SQL built at run time (tgp.exec_sql): it may write")
	} else if sqlWrites(sql) {
		a.risk(RiskMedium, at, "writes to the database (tgp.exec_sql with INSERT/UPDATE/DELETE)")
	}
}

// isCode reports whether a timer argument is source text: a string, a
// template, or a concatenation involving one.
func (a *analyzer) isCode(i int32) bool {
	i = a.unwrap(i)
	if i < 0 {
		return false
	}
	switch a.n(i).kind {
	case kString, kTemplateString:
		return true
	case kBinaryExpr:
		return a.hasToken(i, tPlus) && (a.isCode(a.child(i, fLeft)) || a.isCode(a.child(i, fRight)))
	}
	return false
}

// sqlText returns the statically known text of an exec_sql argument: a
// string or a template (its substitutions as placeholders).
func (a *analyzer) sqlText(i int32) (string, bool) {
	i = a.unwrap(i)
	if i < 0 || (a.n(i).kind != kString && a.n(i).kind != kTemplateString) {
		return "", false
	}
	return string(a.decode(i).text), true
}

// builtinModules are Node's built-in modules, each with what a tool does
// instead ("" when the bridge list says it all).
var builtinModules = map[string]string{
	"fs":             "read and write files with tgp.read_file, tgp.write_file and tgp.list_files",
	"child_process":  "tools cannot run programs: do the work in TypeScript",
	"worker_threads": "tools cannot start threads", "cluster": "tools cannot start processes",
	"vm":  "tools cannot evaluate code: write it in the tool",
	"net": "reach HTTP services with tgp.fetch", "http": "reach HTTP services with tgp.fetch",
	"https": "reach HTTP services with tgp.fetch", "http2": "reach HTTP services with tgp.fetch",
	"dgram": "reach HTTP services with tgp.fetch", "tls": "reach HTTP services with tgp.fetch",
	"dns": "reach HTTP services with tgp.fetch", "sqlite": "query the database with tgp.exec_sql",
	"os": "take what you need from args", "process": "take what you need from args",
	"readline": "take input from args", "console": "log with tgp.log",
	"path":   "join '/lib/...' and '/tmp/...' paths with string operations",
	"buffer": "work with strings, or Uint8Array for bytes", "string_decoder": "work with strings",
	"url": "parse the URL with string functions (the sandbox has no URL global)", "querystring": "build the query with encodeURIComponent",
	"timers": "use the global setTimeout / setInterval", "assert": "throw an Error when a check fails", "module": "use static imports",
	"events": "", "stream": "", "util": "", "crypto": "", "zlib": "", "v8": "", "repl": "", "inspector": "",
	"async_hooks": "", "perf_hooks": "", "tty": "", "diagnostics_channel": "", "trace_events": "",
	"wasi": "", "domain": "", "punycode": "", "constants": "", "sys": "",
}

// moduleRisk rates importing a module (by its root name without "node:").
func moduleRisk(root string) (Risk, string) {
	switch root {
	case "child_process", "worker_threads", "vm", "cluster":
		return RiskCritical, "imports '" + root + "': it runs programs or code"
	case "fs", "net", "http", "https", "http2", "dgram", "tls", "dns":
		return RiskHigh, "imports '" + root + "': direct access to host files or the network"
	}
	return RiskLow, ""
}

// specifier checks the module specifier literal s of an import, export,
// import-require or require call.
func (a *analyzer) specifier(s int32) {
	spec, ok := a.literal(s)
	at := a.n(s).start
	if !ok {
		a.errorAt(at, ruleAllowedImports, "the module name must be a string literal such as './lib/x'")
		a.risk(RiskHigh, at, "a module named by something other than a string literal: which module it loads is not known before it runs")
		return
	}
	if !slices.Contains(a.modules, spec) {
		a.modules = append(a.modules, spec)
	}
	if strings.HasPrefix(spec, "/mcp/") {
		// An MCP server's tool as a module (the mcp driver's generated
		// /mcp/<server>/<tool>.ts): it reaches that server.
		a.risk(RiskMedium, at, "calls the MCP tool "+strings.TrimSuffix(strings.TrimPrefix(spec, "/mcp/"), ".ts")+" (require('"+spec+"')): it reaches an MCP server")
		return
	}
	if strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") {
		return // another tool, resolved inside the jailed tool tree
	}
	a.bareModule(at, spec)
}

// bareModule judges the import of the bare module spec ("lodash/fp",
// "node:fs") at offset at: its risk, then whether it may be imported.
func (a *analyzer) bareModule(at uint32, spec string) {
	bare := strings.TrimPrefix(spec, "node:")
	root := moduleRoot(bare)
	if level, reason := moduleRisk(root); level != RiskLow {
		a.risk(level, at, reason)
	}
	ai := a.c.allowedImports
	if ai[spec] || ai[bare] || ai[root] || ai["node:"+root] {
		return
	}
	if instead, builtin := builtinModules[root]; builtin {
		msg := "Node built-in module '" + spec + "' does not exist in the sandbox: the tgp bridge is the way out " +
			"(tgp.read_file, tgp.write_file, tgp.list_files, tgp.fetch, tgp.exec_sql)"
		if instead != "" {
			msg += "; " + instead
		}
		a.errorAt(at, ruleAllowedImports, msg)
		return
	}
	allowed := "none are configured"
	if a.c.allowedList != "" {
		allowed = "allowed: " + a.c.allowedList
	}
	a.errorAt(at, ruleAllowedImports, "import of '"+spec+"' is not allowed: import other tools by relative path ('./lib/x') or only the allowed modules ("+allowed+")")
}

// moduleRoot is the package a bare module path names: "lodash" for
// "lodash/fp", "@scope/pkg" for "@scope/pkg/sub".
func moduleRoot(bare string) string {
	k := strings.IndexByte(bare, '/')
	if k < 0 {
		return bare
	}
	if !strings.HasPrefix(bare, "@") {
		return bare[:k]
	}
	if k2 := strings.IndexByte(bare[k+1:], '/'); k2 >= 0 {
		return bare[:k+1+k2]
	}
	return bare
}

// number applies no-magic-numbers to numeric literal i.
func (a *analyzer) number(i int32) {
	raw := string(a.text(i))
	v, ok := parseNumber(raw)
	if !ok || a.n(i).inType || a.n(i).inEnum { // a literal type, or a named enum member
		return
	}
	if a.allowedNumber(i, v) {
		return
	}
	a.errorAt(a.n(i).start, ruleMagicNumbers,
		"Found magic number "+numberText(raw, v)+": pass it as an argument (args.x) or name it in the tool's parameters")
}

// allowedNumber reports whether the number literal i of value v (negated
// when it follows a unary minus) is one of the allowed numbers.
func (a *analyzer) allowedNumber(i int32, v float64) bool {
	negated := false
	if p := a.n(i).parent; p >= 0 && a.n(p).kind == kUnaryExpr && a.hasToken(p, tMinus) {
		negated = true
	}
	for _, x := range a.c.allowedNumbers {
		if x == v || (negated && x == -v) {
			return true
		}
	}
	return false
}

// numberText shows the literal raw, with its value v when it reads
// otherwise ("0x10 (= 16)").
func numberText(raw string, v float64) string {
	format := byte('f')
	if math.Abs(v) >= 1e21 || (v != 0 && math.Abs(v) < 1e-6) {
		format = 'g'
	}
	shown := strconv.FormatFloat(v, format, -1, 64)
	if shown != raw {
		shown = raw + " (= " + shown + ")"
	}
	return shown
}

// namedSecret reports a credential-like name (password, token, apiKey ...)
// given a non-empty string literal.
func (a *analyzer) namedSecret(name, value int32) {
	if name < 0 || value < 0 {
		return
	}
	switch a.n(name).kind {
	case kIdentifier, kPropertyIdentifier:
	case kString:
	default:
		return
	}
	var id string
	if a.n(name).kind == kString {
		s, _ := a.literal(name)
		id = s
	} else {
		id = a.name(name)
	}
	if !credentialName(id) {
		return
	}
	value = a.unwrap(value)
	v, ok := a.literal(value)
	if !ok || strings.TrimSpace(v) == "" {
		return
	}
	a.n(value).secret = true
	at := a.n(value).start
	a.errorAt(at, ruleSecret, "'"+id+"' is given a hardcoded secret: pass it as an argument (args."+id+") instead of writing it in the source")
	a.risk(RiskHigh, at, "hardcoded credential")
}

// credentialName reports whether an identifier names a credential: its
// last word is password/secret/token/..., or its last two words are
// api+key, access+key, private+key ... (camelCase, snake_case or
// kebab-case).
func credentialName(id string) bool {
	words := splitWords(id)
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	switch last {
	case "password", "passwd", "pwd", "passphrase", "secret", "token", "credential", "credentials", "apikey":
		return true
	case "key":
		if len(words) >= 2 {
			switch words[len(words)-2] {
			case "api", "access", "secret", "private", "auth", "signing", "encryption":
				return true
			}
		}
	}
	return false
}

// splitWords splits an identifier into lower-case words at '_', '-', '.'
// and lower-to-upper case changes.
func splitWords(id string) []string {
	var words []string
	start := 0
	flush := func(end int) {
		if end > start {
			words = append(words, strings.ToLower(id[start:end]))
		}
	}
	for k := 0; k < len(id); k++ {
		if isWordSeparator(id[k]) {
			flush(k)
			start = k + 1
		} else if k > 0 && isLowerToUpper(id[k-1], id[k]) {
			flush(k)
			start = k
		}
	}
	flush(len(id))
	return words
}

// isWordSeparator reports whether ch separates the words of a name.
func isWordSeparator(ch byte) bool { return ch == '_' || ch == '-' || ch == '.' || ch == ' ' }

// isLowerToUpper reports whether a camel-case word starts at ch (after
// prev): apiKey -> api|Key.
func isLowerToUpper(prev, ch byte) bool {
	return ch >= 'A' && ch <= 'Z' && prev >= 'a' && prev <= 'z'
}

// firstTreeError returns the position of the first ERROR or MISSING node.
func (a *analyzer) firstTreeError() (uint32, bool) {
	for i := range a.t.nodes {
		n := &a.t.nodes[i]
		if n.kind == kError || n.missing {
			return n.start, true
		}
	}
	return 0, false
}

// treeSyntaxErrors reports tree-sitter's ERROR and MISSING nodes; used only
// when the transpiler rejected the source without a diagnostic.
func (a *analyzer) treeSyntaxErrors() []Finding {
	var out []Finding
	for i := int32(0); int(i) < len(a.t.nodes); i++ {
		n := a.n(i)
		var msg string
		switch {
		case n.missing:
			msg = "missing " + tsparse.SymbolName(n.sym) + " here: add it"
		case n.kind == kError:
			txt := string(a.text(i))
			if len(txt) > 40 {
				txt = txt[:40] + "..."
			}
			msg = "unexpected '" + txt + "': fix the syntax here"
		default:
			continue
		}
		line, col := a.t.pos(n.start)
		out = append(out, Finding{Line: line, Column: col, Rule: ruleSyntax, Message: msg, Severity: SeverityError})
	}
	return out
}
