package pii

import (
	"unicode"
	"unicode/utf8"

	"github.com/agentos-run/agentos/driver"
)

// Echo is what one request got back when its tokens were restored
// (RestoreEcho): the values to look for in that call's reply and error.
// The zero Echo finds nothing.
//
// IMPORTANT: whatever restores a request for a driver MUST pass the
// driver's reply and error through the Echo, then tokenize them (JSON,
// Error), so that no restored value comes back in a form the detectors
// miss. Device and Session do.
type Echo struct{ pairs []Pair }

// RestoreEcho is Restore, and returns the Echo of the values restored.
func (t *Tokenizer) RestoreEcho(doc []byte) ([]byte, Echo, error) {
	var e Echo
	out, err := t.restoreDoc(doc, &e.pairs)
	if err != nil {
		return nil, Echo{}, err
	}
	return out, e, nil
}

// String returns s with every restored value, in any encoding, replaced
// by its token; s itself when there is none.
func (e Echo) String(s string) string { return mask(s, e.pairs) }

// JSON returns doc with every restored value in its strings (object keys
// included), in any encoding, replaced by its token; doc itself when
// there is none.
func (e Echo) JSON(doc []byte) []byte { return maskJSON(doc, e.pairs) }

// Error returns err with every restored value in its whole message (the
// text of wrapping errors included) replaced by its token, as a
// *driver.Error keeping err's code; err itself when there is none.
func (e Echo) Error(err error) error {
	if err == nil || len(e.pairs) == 0 {
		return err
	}
	msg := err.Error()
	m := mask(msg, e.pairs)
	if m == msg {
		return err
	}
	return &driver.Error{Code: driver.AsError(err).Code, Message: m}
}

// A call whose request got real values back (restore_to) may answer them
// in a form the detectors do not see: a fetch error repeats the URL, where
// the value is percent-encoded (ada%40example.com, Ada%20Lovelace,
// %2B44%2020...); a server echoes the query string; a body JSON-escapes
// it. Whatever the detectors find, the wrapper knows exactly which values
// it restored in that call, so it looks for each of them in every
// encoding before the detectors run and puts its token back (mask).
//
// One character of a value may be written, in any mix:
//
//	literally, in either letter case (any white space for a space)
//	+ for a space (form encoding)
//	%XX, %xx, %25XX, %2B... (percent-encoded, at any depth), per UTF-8 byte
//	\xXX per UTF-8 byte, \uXXXX (and surrogate pairs), \n \t \" \/ ...,
//	with any run of backslashes (JSON or Go quoting, nested)
//	&#NN; &#xHH; &amp; &lt; &gt; &quot; &apos; (HTML)
//
// A value that starts (ends) with a letter or digit is not masked inside
// a longer word: "Ada" is not masked in "Canada" (an escape just before
// it, as in %20Ada, counts as a boundary).

// maxDepth bounds the nesting of an escape: %25 prefixes, backslash runs.
const maxDepth = 8

// mask returns s with every occurrence of a value of pairs, in any
// encoding or common transformation (transform.go), replaced by its
// token; s itself when there is none.
func mask(s string, pairs []Pair) string {
	if len(pairs) == 0 || s == "" {
		return s
	}
	return maskTransformed(maskEncoded(s, pairs), pairs)
}

// maskEncoded is mask for the value's encodings only.
func maskEncoded(s string, pairs []Pair) string {
	var out []byte // nil until the first replacement
	copied := 0
	var cur, next []int
	for i := 0; i < len(s); i++ {
		best, tok := -1, ""
		for _, p := range pairs {
			if e := matchValue(s, i, p.Value, &cur, &next); e > best {
				best, tok = e, p.Token
			}
		}
		if best < 0 {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(s))
		}
		out = append(append(out, s[copied:i]...), tok...)
		copied = best
		i = best - 1
	}
	if out == nil {
		return s
	}
	return string(append(out, s[copied:]...))
}

// matchValue returns the end of the longest encoding of v starting at
// s[i], or -1. cur and next are scratch space.
func matchValue(s string, i int, v string, cur, next *[]int) int {
	if v == "" {
		return -1
	}
	first, _ := utf8.DecodeRuneInString(v)
	if !mayStart(s[i], first) {
		return -1
	}
	if wordRune(first) && i > 0 && isASCIIWord(s[i-1]) && !escapeEndsAt(s, i) {
		return -1
	}
	*cur = append((*cur)[:0], i)
	var last rune
	for _, r := range v {
		last = r
		*next = (*next)[:0]
		for _, p := range *cur {
			*next = units(s, p, r, *next)
		}
		if len(*next) == 0 {
			return -1
		}
		*cur, *next = *next, *cur
	}
	end := -1
	for _, e := range *cur {
		if wordRune(last) && e < len(s) && isASCIIWord(s[e]) {
			continue
		}
		end = max(end, e)
	}
	return end
}

// mayStart reports whether a unit starting with the byte c may stand for
// r: a cheap test before the real one.
func mayStart(c byte, r rune) bool {
	switch c {
	case '%', '\\', '&', '+':
		return true
	}
	if r < utf8.RuneSelf {
		return c|0x20 == byte(r)|0x20 || (unicode.IsSpace(r) && c <= ' ') || c >= utf8.RuneSelf
	}
	return true
}

// units appends to ends the end of every unit at s[p] that stands for r
// (ends is kept free of duplicates).
func units(s string, p int, r rune, ends []int) []int {
	if p >= len(s) {
		return ends
	}
	// Literal.
	if c, n := utf8.DecodeRuneInString(s[p:]); same(c, r) && c != utf8.RuneError {
		ends = appendNew(ends, p+n)
	}
	switch s[p] {
	case '+':
		if unicode.IsSpace(r) {
			ends = appendNew(ends, p+1)
		}
	case '%', '\\':
		// A rune spelled byte by byte: %XX or \xXX each, at any depth.
		var buf [utf8.UTFMax]byte
		ends = runeOfBytes(s, p, r, buf[:0], ends)
		if s[p] == '\\' {
			ends = backslashUnits(s, p, r, ends)
		}
	case '&':
		if c, n := entity(s[p:]); n > 0 && same(c, r) {
			ends = appendNew(ends, p+n)
		}
	}
	return ends
}

// runeOfBytes appends the ends of the byte-escaped spellings of r at s[p]
// (got holds the bytes read so far).
func runeOfBytes(s string, p int, r rune, got []byte, ends []int) []int {
	var enc [utf8.UTFMax]byte
	want := enc[:utf8.EncodeRune(enc[:], r)]
	for _, u := range byteEscapes(s, p) {
		b := append(got, u.b)
		k := len(b)
		if k > len(want) {
			continue
		}
		if k == 1 && len(want) == 1 {
			// One byte: ASCII, compared ignoring case and space kind.
			if same(rune(u.b), r) || (u.b == '+' && unicode.IsSpace(r)) { // %2B: a form's space, encoded again
				ends = appendNew(ends, u.end)
			}
			continue
		}
		if b[k-1] != want[k-1] {
			continue
		}
		if k == len(want) {
			ends = appendNew(ends, u.end)
			continue
		}
		ends = runeOfBytes(s, u.end, r, b, ends)
	}
	return ends
}

// byteUnit is one escaped byte and where its spelling ends.
type byteUnit struct {
	b   byte
	end int
}

// byteEscapes returns the escaped bytes at s[p]: %XX behind any run of
// %25, \xXX behind any run of backslashes.
func byteEscapes(s string, p int) []byteUnit {
	var out []byteUnit
	if p < len(s) && s[p] == '%' {
		// %XX, %25XX (the '%' itself encoded), %2525XX...
		q := p + 1
		for d := 0; d < maxDepth && q+1 < len(s) && isHex(s[q]) && isHex(s[q+1]); d++ {
			b := unhex(s[q])<<4 | unhex(s[q+1])
			out = append(out, byteUnit{b, q + 2})
			if b != '%' {
				break
			}
			q += 2
		}
	}
	if q := skipBackslashes(s, p); q > p && q+2 < len(s) && s[q] == 'x' && isHex(s[q+1]) && isHex(s[q+2]) {
		out = append(out, byteUnit{unhex(s[q+1])<<4 | unhex(s[q+2]), q + 3})
	}
	return out
}

// backslashUnits appends the ends of the backslash escapes of r at s[p]:
// \uXXXX (a surrogate pair for r beyond the BMP) and the short escapes.
func backslashUnits(s string, p int, r rune, ends []int) []int {
	q := skipBackslashes(s, p)
	if q == p || q >= len(s) {
		return ends
	}
	if s[q] != 'u' {
		if c := shortEscapes[s[q]]; c != 0 && same(c, r) {
			ends = appendNew(ends, q+1)
		}
		return ends
	}
	c, ok := hex4(s, q+1)
	if !ok {
		return ends
	}
	if utf16High(c) {
		if end, ok := lowSurrogateEnd(s, p, q, rune(c), r); ok {
			ends = appendNew(ends, end)
		}
	} else if same(rune(c), r) {
		ends = appendNew(ends, q+5)
	}
	return ends
}

// shortEscapes are the characters of the one-letter backslash escapes
// (\n, \", ...), by letter; 0: none.
var shortEscapes = [256]rune{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f', '"': '"', '\'': '\'', '/': '/', '\\': '\\'}

// lowSurrogateEnd finds, after the \uXXXX high surrogate hi escaped at
// s[p:q+5] (q-p backslashes), the low half behind as many backslashes; it
// returns where the pair ends when the pair stands for r.
func lowSurrogateEnd(s string, p, q int, hi, r rune) (int, bool) {
	k := q - p
	lo := q + 5
	if lo+k+5 > len(s) || skipBackslashes(s, lo) != lo+k || s[lo+k] != 'u' {
		return 0, false
	}
	d, ok := hex4(s, lo+k+1)
	if !ok || d < 0xDC00 || d >= 0xE000 || !same((hi-0xD800)<<10|(rune(d)-0xDC00)+0x10000, r) {
		return 0, false
	}
	return lo + k + 5, true
}

// skipBackslashes returns the end of the run of backslashes at s[p] (at
// most maxDepth of them; p when there is none).
func skipBackslashes(s string, p int) int {
	q := p
	for q < len(s) && q-p < maxDepth && s[q] == '\\' {
		q++
	}
	return q
}

var entities = []struct {
	name string
	r    rune
}{{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}, {"&nbsp;", ' '}}

// entity decodes an HTML character reference at the start of s.
func entity(s string) (rune, int) {
	for _, e := range entities {
		if len(s) >= len(e.name) && equalFoldASCII(s[:len(e.name)], e.name) {
			return e.r, len(e.name)
		}
	}
	return numericEntity(s)
}

// numericEntity decodes a numeric character reference (&#65; or &#x41;,
// at most 8 digits) at the start of s.
func numericEntity(s string) (rune, int) {
	if len(s) < 4 || s[1] != '#' {
		return 0, 0
	}
	i, base := 2, rune(10)
	if s[2] == 'x' || s[2] == 'X' {
		i, base = 3, 16
	}
	var c rune
	start := i
	for ; i < len(s) && i-start < 8; i++ {
		d := s[i]
		switch {
		case d >= '0' && d <= '9':
			c = c*base + rune(d-'0')
		case base == 16 && isHex(d):
			c = c*base + rune(unhex(d))
		case d == ';' && i > start:
			return c, i + 1
		default:
			return 0, 0
		}
	}
	return 0, 0
}

// same reports whether the decoded character c stands for r: equal,
// equal ignoring case, or both white space.
func same(c, r rune) bool {
	if c == r {
		return true
	}
	if unicode.IsSpace(c) && unicode.IsSpace(r) {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// escapeEndsAt reports whether an escape (%XX, \uXXXX, \xXX) ends just
// before s[i]: its last character is not part of a word.
func escapeEndsAt(s string, i int) bool {
	if i >= 3 && s[i-3] == '%' && isHex(s[i-2]) && isHex(s[i-1]) {
		return true
	}
	if i >= 4 && s[i-4] == '\\' && s[i-3] == 'x' && isHex(s[i-2]) && isHex(s[i-1]) {
		return true
	}
	if i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' {
		_, ok := hex4(s, i-4)
		return ok
	}
	return false
}

func wordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func isASCIIWord(c byte) bool {
	return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') || (c >= '0' && c <= '9')
}

func hex4(s string, p int) (uint16, bool) {
	if p+4 > len(s) {
		return 0, false
	}
	var v uint16
	for i := p; i < p+4; i++ {
		if !isHex(s[i]) {
			return 0, false
		}
		v = v<<4 | uint16(unhex(s[i]))
	}
	return v, true
}

func utf16High(c uint16) bool { return c >= 0xD800 && c < 0xDC00 }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

func appendNew(ends []int, e int) []int {
	for _, x := range ends {
		if x == e {
			return ends
		}
	}
	return append(ends, e)
}

// maskJSON returns doc with every value of pairs in its strings, in any
// encoding, replaced by its token (mask); doc itself when there is none.
func maskJSON(doc []byte, pairs []Pair) []byte {
	if len(pairs) == 0 {
		return doc
	}
	out, _ := walkStrings(doc, func(dst, raw []byte, escaped bool) ([]byte, bool, error) {
		if escaped {
			if s, err := unquote(raw); err == nil {
				if m := mask(s, pairs); m != s {
					return appendQuoted(dst, m), true, nil
				}
				return dst, false, nil
			}
		}
		// Raw text (or a string JSON cannot read): tokens need no escaping.
		s := string(raw)
		if m := mask(s, pairs); m != s {
			return append(append(append(dst, '"'), m...), '"'), true, nil
		}
		return dst, false, nil
	})
	return out
}
