package pii

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// nameMatcher finds the names of a list as whole words, ignoring case. A
// string is searched only when one of its words is the first word of a
// name (a map lookup per word), so a list of thousands of names costs
// little on text that holds none.
type nameMatcher struct {
	re       *regexp.Regexp  // every name, longest first, without word boundaries
	first    map[string]bool // the first word of each name, lower case
	maxFirst int             // the longest first word, in bytes
}

func newNameMatcher(names []string) (*nameMatcher, error) {
	m := &nameMatcher{first: map[string]bool{}}
	var qs []string
	for _, n := range names {
		fields := strings.Fields(n)
		if len(fields) == 0 {
			continue
		}
		w := firstWord([]byte(fields[0]))
		if w == nil {
			return nil, fmt.Errorf("%w: the name %q starts with no letter or digit: names are matched as whole words", ErrConfig, n)
		}
		lw := strings.ToLower(string(w))
		m.first[lw] = true
		m.maxFirst = max(m.maxFirst, len(lw))
		q := make([]string, len(fields))
		for i, f := range fields {
			q[i] = regexp.QuoteMeta(f)
		}
		qs = append(qs, strings.Join(q, `\s+`)) // a line break between first and last name
	}
	if len(qs) == 0 {
		return nil, nil
	}
	sort.SliceStable(qs, func(i, j int) bool { return len(qs[i]) > len(qs[j]) })
	qs = slices.Compact(qs)
	re, err := regexp.Compile(`(?i)(?:` + strings.Join(qs, "|") + `)`)
	if err != nil {
		return nil, fmt.Errorf("%w: the list of names: %v", ErrConfig, err)
	}
	m.re = re
	return m, nil
}

// isWordByte reports whether c belongs to a word: ASCII letters, digits,
// "_", and every byte of a non-ASCII character.
func isWordByte(c byte) bool {
	return c >= 0x80 || c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') || (c >= '0' && c <= '9')
}

// firstWord returns the leading word of b (nil if b starts with none).
func firstWord(b []byte) []byte {
	i := 0
	for i < len(b) && isWordByte(b[i]) {
		i++
	}
	if i == 0 {
		return nil
	}
	return b[:i]
}

// mayHold reports whether a word of b is a name's first word. It
// allocates only for a word with non-ASCII characters.
func (m *nameMatcher) mayHold(b []byte) bool {
	var buf [64]byte
	for i := 0; i < len(b); {
		if !isWordByte(b[i]) {
			i++
			continue
		}
		j, ascii := i, true
		for j < len(b) && isWordByte(b[j]) {
			ascii = ascii && b[j] < 0x80
			j++
		}
		w := b[i:j]
		i = j
		if len(w) > m.maxFirst {
			continue
		}
		if ascii {
			n := copy(buf[:], w)
			for k := range n {
				if c := buf[k]; c >= 'A' && c <= 'Z' {
					buf[k] = c + 32
				}
			}
			if m.first[string(buf[:n])] {
				return true
			}
		} else if m.first[string(bytes.ToLower(w))] {
			return true
		}
	}
	return false
}

// find returns the names in b that stand as whole words.
func (m *nameMatcher) find(b []byte) [][]int {
	var out [][]int
	for pos := 0; pos < len(b); {
		loc := m.re.FindIndex(b[pos:])
		if loc == nil {
			break
		}
		s, e := pos+loc[0], pos+loc[1]
		if boundary(b, s, e) {
			out = append(out, []int{s, e})
			pos = e
			continue
		}
		_, size := utf8.DecodeRune(b[s:])
		pos = s + size
	}
	return out
}

// boundary reports whether b[s:e] stands as a word: no letter, digit or
// "_" just before or just after it.
func boundary(b []byte, s, e int) bool {
	inWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	if s > 0 {
		if r, _ := utf8.DecodeLastRune(b[:s]); inWord(r) {
			return false
		}
	}
	if e < len(b) {
		if r, _ := utf8.DecodeRune(b[e:]); inWord(r) {
			return false
		}
	}
	return true
}
