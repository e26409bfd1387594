package pii

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A driver a value was restored to may also answer it transformed: SQL's
// replace(?, '@', ' (at) '), hex(?), upper(?), a script's base64 or
// reversed string. mask looks for the encodings of the value itself
// (echo.go); maskTransformed, run after it, looks for these
// transformations of each restored value and puts its token in their
// place:
//
//	its letters and digits in order, in any letter case, whatever stands
//	between two runs of them: nothing, up to 8 non-alphanumeric
//	characters, or the words "at" or "dot" set off by them
//	(ada (at) example dot com, ADA-EXAMPLE_COM, adaexamplecom,
//	0044207946 for +44 20 7946...; a leading + may be written 00)
//	the same, reversed (moc.elpmaxe@ada)
//	the hex of its UTF-8 bytes, of its lower- or upper-case form, in
//	either case (616461..., 0x616461...)
//	its base64, standard or URL alphabet, padded or not, of it or its
//	lower- or upper-case form, also inside the base64 of a longer text
//	(at any of the three byte alignments)
//
// IMPORTANT: this is a list of common transformations, not a proof: a
// driver that computes on the value (a hash, an encryption, a Caesar
// shift, its characters one per row, a substring such as the domain
// alone) answers something no list recognizes. docs/MCP.md says what is
// and is not caught; restore_to MUST name only drivers trusted with the
// real values.

// minTransformed is the fewest letters and digits a value must have for
// its transformed forms to be looked for: fewer would mask unrelated text.
const minTransformed = 5

// maxGap bounds the non-alphanumeric bytes between two runs of a value's
// letters and digits (each side of "at"/"dot").
const maxGap = 8

// shape is what maskTransformed looks for of one restored value.
type shape struct {
	token    string
	segs     []string // the value's runs of letters and digits, in order
	rsegs    []string // the same, reversed
	plus     bool     // the value starts with '+' (a phone: 00 may stand for it)
	literals []string // hex and base64 spellings, matched as written
	hexes    []string // hex spellings, matched in either letter case
}

// shapeOf returns the shape of p; ok false when the value is too short.
func shapeOf(p Pair) (shape, bool) {
	segs := strings.FieldsFunc(p.Value, func(r rune) bool { return !alnum(r) })
	n := 0
	for _, s := range segs {
		n += utf8.RuneCountInString(s)
	}
	if n < minTransformed {
		return shape{}, false
	}
	sh := shape{token: p.Token, segs: segs, plus: strings.HasPrefix(strings.TrimSpace(p.Value), "+")}
	for i := len(segs) - 1; i >= 0; i-- {
		sh.rsegs = append(sh.rsegs, reverseString(segs[i]))
	}
	for _, v := range dedupe(p.Value, strings.ToLower(p.Value), strings.ToUpper(p.Value)) {
		sh.hexes = append(sh.hexes, hex.EncodeToString([]byte(v)))
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			sh.literals = append(sh.literals, base64Cores(enc, []byte(v))...)
		}
	}
	sh.literals = dedupe(sh.literals...)
	return sh, true
}

// base64Cores returns, for each of the three byte alignments v may have
// inside a longer text, the base64 characters that depend on v's bytes
// alone (at least 6 of them).
func base64Cores(enc *base64.Encoding, v []byte) []string {
	var out []string
	for a := range 3 {
		buf := make([]byte, a+len(v))
		copy(buf[a:], v)
		e := enc.EncodeToString(buf)
		from, to := (8*a+5)/6, 8*(a+len(v))/6
		if to-from >= 6 {
			out = append(out, e[from:to])
		}
	}
	return out
}

// tspan is one transformed spelling found in a string.
type tspan struct {
	start, end int
	token      string
}

// maskTransformed returns s with every transformed spelling of a value of
// pairs replaced by its token; s itself when there is none.
func maskTransformed(s string, pairs []Pair) string {
	if len(s) < minTransformed {
		return s
	}
	var spans []tspan
	lower := ""
	for _, p := range pairs {
		sh, ok := shapeOf(p)
		if !ok {
			continue
		}
		spans = append(spans, sh.segments(s)...)
		for _, l := range sh.literals {
			spans = appendAll(spans, s, l, sh.token)
		}
		if len(sh.hexes) > 0 && lower == "" {
			lower = asciiLower(s)
		}
		for _, h := range sh.hexes {
			spans = appendAll(spans, lower, h, sh.token)
		}
	}
	if len(spans) == 0 {
		return s
	}
	// The earliest first, the longest at one start; overlaps dropped.
	slices.SortFunc(spans, func(a, b tspan) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.start < last {
			continue
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(sp.token)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// appendAll appends a span for every occurrence of sub in s.
func appendAll(spans []tspan, s, sub, token string) []tspan {
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return spans
		}
		spans = append(spans, tspan{i + j, i + j + len(sub), token})
		i += j + len(sub)
	}
}

// segments returns the spans of s that spell the value's letters and
// digits with other separators, forwards or reversed.
func (sh shape) segments(s string) []tspan {
	var out []tspan
	for i := 0; i < len(s); {
		end := -1
		if startsWord(s, i) {
			end = max(matchSegs(s, i, sh.segs), matchSegs(s, i, sh.rsegs))
			if sh.plus && strings.HasPrefix(s[i:], "00") {
				end = max(end, matchSegs(s, i+2, sh.segs))
			}
		}
		if end > i && endsWord(s, end) {
			out = append(out, tspan{i, end, sh.token})
			i = end
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return out
}

// matchSegs returns the end of the longest spelling of segs at s[i] (the
// segments in order, any gap between them), or -1.
func matchSegs(s string, i int, segs []string) int {
	if len(segs) == 0 {
		return -1
	}
	e := foldPrefix(s, i, segs[0])
	if e < 0 {
		return -1
	}
	if len(segs) == 1 {
		return e
	}
	best := -1
	for _, g := range gaps(s, e) {
		if end := matchSegs(s, g, segs[1:]); end > best {
			best = end
		}
	}
	return best
}

// gaps returns where the next run of letters and digits may start after
// one ending at e: at e, after up to maxGap separators, and after "at" or
// "dot" set off by separators.
func gaps(s string, e int) []int {
	q := skipSeps(s, e)
	out := []int{e}
	if q == e {
		return out
	}
	out = append(out, q)
	for _, w := range []string{"at", "dot"} {
		if r := foldPrefix(s, q, w); r > 0 {
			if r2 := skipSeps(s, r); r2 > r {
				out = append(out, r2)
			}
		}
	}
	return out
}

// skipSeps returns the end of the run of non-alphanumeric characters at
// s[p], at most maxGap bytes of them.
func skipSeps(s string, p int) int {
	q := p
	for q < len(s) {
		r, n := utf8.DecodeRuneInString(s[q:])
		if alnum(r) || q+n-p > maxGap {
			break
		}
		q += n
	}
	return q
}

// foldPrefix returns the end of w at s[p] in any letter case, or -1.
func foldPrefix(s string, p int, w string) int {
	for _, r := range w {
		if p >= len(s) {
			return -1
		}
		c, n := utf8.DecodeRuneInString(s[p:])
		if c != r && !foldEq(c, r) {
			return -1
		}
		p += n
	}
	return p
}

func foldEq(c, r rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// startsWord reports whether no letter or digit is just before s[i].
func startsWord(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !alnum(r)
}

// endsWord reports whether no letter or digit is at s[e].
func endsWord(s string, e int) bool { return !alnumAt(s, e) }

func alnumAt(s string, p int) bool {
	if p >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[p:])
	return alnum(r)
}

func alnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func reverseString(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// asciiLower lowers s's ASCII letters only (the byte offsets stay).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func dedupe(vs ...string) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
