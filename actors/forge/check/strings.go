package check

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// Regular expressions here only ever look at the decoded value of ONE
// string or template literal node; code patterns are found on the tree.

// decoded is the value of a string or template literal with escapes
// decoded and each template substitution replaced by one NUL byte.
// offs[k] is the source offset that text[k] came from.
type decoded struct {
	text []byte
	offs []uint32
	// obfuscated is the source offset of the first \x escape, or of a \u
	// escape that spells a printable ASCII character; -1 when none.
	obfuscated int64
}

// decode decodes string or template literal i.
// unquoted is the span start..end of a string or template literal
// without its quotes.
func (a *analyzer) unquoted(start, end uint32) (uint32, uint32) {
	if end <= start {
		return start, end
	}
	q := a.src[start]
	if q != '\'' && q != '"' && q != '`' {
		return start, end
	}
	start++
	if end > start && a.src[end-1] == q {
		end--
	}
	return start, end
}

func (a *analyzer) decode(i int32) decoded {
	n := a.n(i)
	d := decoded{obfuscated: -1}
	start, end := a.unquoted(n.start, n.end)
	d.text = make([]byte, 0, end-start)
	d.offs = make([]uint32, 0, end-start)
	pos := start
	raw := func(to uint32) {
		for ; pos < to && pos < end; pos++ {
			d.text = append(d.text, a.src[pos])
			d.offs = append(d.offs, pos)
		}
	}
	for c := n.first; c >= 0; c = a.n(c).next {
		cn := a.n(c)
		if cn.kind != kEscapeSequence && cn.kind != kTemplateSubstitution {
			continue
		}
		if cn.start < pos || cn.end > end {
			continue
		}
		raw(cn.start)
		if cn.kind == kTemplateSubstitution {
			d.text = append(d.text, 0)
			d.offs = append(d.offs, cn.start)
		} else {
			d.escape(a.src[cn.start:cn.end], cn.start)
		}
		pos = cn.end
	}
	raw(end)
	return d
}

// escape appends the value of escape sequence e found at offset at.
func (d *decoded) escape(e []byte, at uint32) {
	if len(e) < 2 || e[0] != '\\' {
		for j := range e {
			d.text = append(d.text, e[j])
			d.offs = append(d.offs, at+uint32(j))
		}
		return
	}
	c := e[1]
	if r, ok := simpleEscapes[c]; ok {
		d.put(r, at)
		return
	}
	switch c {
	case '\n', '\r':
		// line continuation: no character
	case 'x', 'u':
		d.hexEscape(c, string(e[2:]), at)
	default:
		r, _ := utf8.DecodeRune(e[1:])
		d.put(r, at)
	}
}

// simpleEscapes are the one-letter escapes, by letter.
var simpleEscapes = map[byte]rune{'n': '\n', 't': '\t', 'r': '\r', 'v': '\v', 'f': '\f', 'b': '\b', '0': 0}

// put appends r, encoded, every byte of it at the escape's offset at.
func (d *decoded) put(r rune, at uint32) {
	var buf [utf8.UTFMax]byte
	k := utf8.EncodeRune(buf[:], r)
	for j := 0; j < k; j++ {
		d.text = append(d.text, buf[j])
		d.offs = append(d.offs, at)
	}
}

// hexEscape appends the character of \xHH or \uHHHH / \u{H...} (c is x
// or u, hex the digits), noting the first escape that spells a plain
// character (obfuscation).
func (d *decoded) hexEscape(c byte, hex string, at uint32) {
	if c == 'u' && strings.HasPrefix(hex, "{") {
		hex = strings.Trim(hex, "{}")
	}
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || v > utf8.MaxRune {
		d.put(utf8.RuneError, at)
		return
	}
	if d.obfuscated < 0 && (c == 'x' || (v >= 0x20 && v < 0x7f)) {
		d.obfuscated = int64(at)
	}
	d.put(rune(v), at)
}

var (
	reEmail      = lazyre.New(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	reKeyPrefix  = lazyre.New(`(?:^|[^A-Za-z0-9_])(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16}|xox[abposr]-[A-Za-z0-9-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----)`)
	reRmRf       = lazyre.New(`\brm\s+(?:-\S+\s+)*(?:-[A-Za-z]*(?:[rR][A-Za-z]*f|f[A-Za-z]*[rR])|--recursive\b|--force\b)`)
	reDelS       = lazyre.New(`(?i)\b(?:del|erase|rd|rmdir)\s+(?:/[a-z]\s+)*/s\b`)
	reMkfs       = lazyre.New(`\bmkfs(?:\.[a-z0-9]+)?\b`)
	reForkBomb   = lazyre.New(`:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`)
	reDdDevice   = lazyre.New(`\bdd\s+.*\bof=/dev/`)
	reDropTable  = lazyre.New(`(?i)\bdrop\s+(?:table|database|schema)\b`)
	reTruncate   = lazyre.New("(?i)\\btruncate\\s+table\\b|(?:^|;)\\s*truncate\\s+[A-Za-z_\"`\\[][\\w.\"`\\]]*\\s*(?:;|$)")
	reDeleteFrom = lazyre.New(`(?i)\bdelete\s+from\b`)
	reUpdateSet  = lazyre.New(`(?i)\bupdate\s+\S+\s+set\b`)
	reWhere      = lazyre.New(`(?i)\bwhere\b`)
	reSQLWrite   = lazyre.New(`(?i)\b(?:insert\s+(?:or\s+\w+\s+)?into|update\s+\S+\s+set|delete\s+from|replace\s+into|merge\s+into|create\s+(?:table|index|view|trigger)|alter\s+table)\b`)
)

// lowerASCII returns a lower-cased copy for cheap pre-filters.
func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for k, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[k] = c
	}
	return out
}

// isModuleSpecifier reports whether literal i names a module (checked by
// the import rules instead).
func (a *analyzer) isModuleSpecifier(i int32) bool {
	n := a.n(i)
	p := n.parent
	if p < 0 {
		return false
	}
	switch a.n(p).kind {
	case kImportStatement, kExportStatement, kImportRequireClause:
		return n.field == fSource
	case kArguments:
		return a.isLoaderArgument(p, i)
	}
	return false
}

// isLoaderArgument reports whether i is the first argument (of the
// argument list args) of a require(...) or import(...) call.
func (a *analyzer) isLoaderArgument(args, i int32) bool {
	call := a.n(args).parent
	if call < 0 || a.n(call).kind != kCallExpr || a.firstNamed(args) != i {
		return false
	}
	fn := a.unwrap(a.child(call, fFunction))
	return fn >= 0 && (a.n(fn).kind == kImport || (a.n(fn).kind == kIdentifier && a.is(fn, "require")))
}

// stringLiteral runs the text rules and risk probes on literal i.
func (a *analyzer) stringLiteral(i int32) {
	if a.isModuleSpecifier(i) || a.n(i).end-a.n(i).start <= 2 { // '' or ``
		return
	}
	d := a.decode(i)
	if d.obfuscated >= 0 {
		a.risk(RiskHigh, uint32(d.obfuscated), "\\x or \\u escapes spelling plain characters in a string literal can hide code or data")
	}
	if len(d.text) == 0 {
		return
	}
	at := func(k int) uint32 { return d.offs[k] }
	a.hardcodedData(i, d.text, at)
	a.dangerousText(d.text, at)
}

// hardcodedData reports an email address and a secret in the text t of
// the string literal i (unless a name-based finding already covers it).
func (a *analyzer) hardcodedData(i int32, t []byte, at func(int) uint32) {
	if bytes.IndexByte(t, '@') >= 0 {
		if m := reEmail().FindIndex(t); m != nil {
			a.errorAt(at(m[0]), ruleEmail, "Found hardcoded email address '"+string(t[m[0]:m[1]])+
				"': pass it as an argument (args.email) instead")
		}
	}
	if a.n(i).secret {
		return
	}
	if k, ok := secretAt(t); ok {
		a.errorAt(at(k), ruleSecret, "Found what looks like a hardcoded secret or ID ("+preview(t[k:])+
			"): pass it as an argument (args.token, args.id ...) instead of writing it in the source")
		a.risk(RiskHigh, at(k), "hardcoded credential or key")
	}
}

// dangerPattern is a destructive command or statement a string may hold:
// a regular expression behind a cheap filter (a substring of the text, or
// of its ASCII lowercase).
type dangerPattern struct {
	needle string
	lower  bool // the needle is looked for in the lowercased text
	re     func() *regexp.Regexp
	level  Risk
	reason string
	quote  bool // the reason ends with the match, upper-cased, in parentheses
}

// dangerPatterns are checked in this order (the order of risks at one
// position).
var dangerPatterns = []dangerPattern{
	{needle: "rm", lower: true, re: reRmRf, level: RiskCritical, reason: "destructive shell command (rm -rf)"},
	{needle: "/s", lower: true, re: reDelS, level: RiskCritical, reason: "destructive shell command (del /s)"},
	{needle: "mkfs", re: reMkfs, level: RiskCritical, reason: "destructive shell command (mkfs formats a disk)"},
	{needle: "of=/dev/", re: reDdDevice, level: RiskCritical, reason: "destructive shell command (dd onto a device)"},
	{needle: "|", re: reForkBomb, level: RiskCritical, reason: "shell fork bomb"},
	{needle: "drop", lower: true, re: reDropTable, level: RiskCritical, reason: "destructive SQL", quote: true},
	{needle: "truncate", lower: true, re: reTruncate, level: RiskCritical, reason: "destructive SQL (TRUNCATE)"},
}

// dangerousText rates what the text t of a string literal would do if it
// reached a shell or a database, and where it points.
func (a *analyzer) dangerousText(t []byte, at func(int) uint32) {
	low := lowerASCII(t)
	for _, p := range dangerPatterns {
		a.dangerPattern(p, t, low, at)
	}
	if bytes.Contains(low, []byte("delete")) || bytes.Contains(low, []byte("update")) {
		a.sweepingSQL(t, at)
	}
	if k := traversalAt(t); k >= 0 {
		a.risk(RiskHigh, at(k), "path traversal ('../../') out of the tool's directories")
	}
	if k := bytes.Index(low, []byte("<hidden>")); k >= 0 {
		a.risk(RiskHigh, at(k), "<hidden> markers suggest output meant to escape review")
	}
}

// dangerPattern reports p where t (low: its lowercase) holds it.
func (a *analyzer) dangerPattern(p dangerPattern, t, low []byte, at func(int) uint32) {
	in := t
	if p.lower {
		in = low
	}
	if !bytes.Contains(in, []byte(p.needle)) {
		return
	}
	m := p.re().FindIndex(t)
	if m == nil {
		return
	}
	reason := p.reason
	if p.quote {
		reason += " (" + strings.ToUpper(string(t[m[0]:m[1]])) + ")"
	}
	a.risk(p.level, at(m[0]), reason)
}

// traversalAt is the offset of the first '../../' (or '..\..\') in t, or -1.
func traversalAt(t []byte) int {
	if k := bytes.Index(t, []byte("../../")); k >= 0 {
		return k
	}
	return bytes.Index(t, []byte(`..\..\`))
}

// sweepingSQL flags DELETE FROM and UPDATE ... SET statements that have no
// WHERE: they touch every row.
func (a *analyzer) sweepingSQL(t []byte, at func(int) uint32) {
	off := 0
	for _, stmt := range bytes.Split(t, []byte(";")) {
		if !reWhere().Match(stmt) {
			if m := reDeleteFrom().FindIndex(stmt); m != nil {
				a.risk(RiskHigh, at(off+m[0]), "SQL DELETE without WHERE deletes every row")
			} else if m := reUpdateSet().FindIndex(stmt); m != nil {
				a.risk(RiskHigh, at(off+m[0]), "SQL UPDATE without WHERE rewrites every row")
			}
		}
		off += len(stmt) + 1
	}
}

// sqlWrites reports whether SQL text changes data or schema.
func sqlWrites(sql string) bool { return reSQLWrite().MatchString(sql) }

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// secretAt returns the offset in t of something that looks like a key or
// an ID: a known key prefix (sk-, ghp_, github_pat_, AKIA, xoxb- ...), a
// run of 24 or more [A-Za-z0-9_-] mixing letters and digits in a value
// without whitespace, or a run of 32 or more mixing upper case, lower case
// and digits anywhere.
func secretAt(t []byte) (int, bool) {
	if m := reKeyPrefix().FindSubmatchIndex(t); m != nil {
		return m[2], true
	}
	spaced := bytes.ContainsAny(t, " \t\r\n\v\f")
	for k := 0; k < len(t); {
		if !isTokenByte(t[k]) {
			k++
			continue
		}
		j := k
		for j < len(t) && isTokenByte(t[j]) {
			j++
		}
		if looksSecret(t[k:j], spaced) {
			return k, true
		}
		k = j
	}
	return 0, false
}

// looksSecret reports whether the token tok (a run of token bytes) looks
// like a key: 24 or more letters and digits in an unspaced text, or 32 or
// more mixing upper case, lower case and digits.
func looksSecret(tok []byte, spaced bool) bool {
	cs := classesOf(tok)
	letter := cs.lower || cs.upper
	return len(tok) >= 24 && letter && cs.digit && !spaced || len(tok) >= 32 && cs.upper && cs.lower && cs.digit
}

// charClasses says which ASCII classes a token holds.
type charClasses struct{ lower, upper, digit bool }

func classesOf(tok []byte) charClasses {
	var cs charClasses
	for _, c := range tok {
		cs.digit = cs.digit || c >= '0' && c <= '9'
		cs.lower = cs.lower || c >= 'a' && c <= 'z'
		cs.upper = cs.upper || c >= 'A' && c <= 'Z'
	}
	return cs
}

// preview shows the start of a secret without repeating all of it.
func preview(b []byte) string {
	n := 0
	for n < len(b) && n < 8 && (isTokenByte(b[n]) || b[n] == ' ') {
		n++
	}
	if n == 0 {
		return "a long key-like string"
	}
	return "'" + string(b[:n]) + "...'"
}
