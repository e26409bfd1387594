package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// isCanonical reports whether raw is already in the canonical, redacted form
// redactor.json would produce, so that it can be stored and compared as is.
// It is a single pass over the bytes with no allocation; anything it is not
// sure of (whitespace, escapes in keys, unsorted or duplicate keys, a
// redacted field name, characters Go's encoder escapes) answers false and
// takes the slow path. Sandbox requests come from JSON.stringify of objects
// whose keys are sorted, so they nearly always take the fast path.
func (r *redactor) isCanonical(raw []byte) bool { return r.canonical(raw, nil) }

// canonical is isCanonical with a run's scope of found secrets too.
func (r *redactor) canonical(raw []byte, scope *secretSet) bool {
	if r.global.in(raw) || scope.in(raw) {
		return false
	}
	if scanURLSecrets(raw, r.extra, nil) > 0 {
		return false
	}
	s := scanner{b: raw, extra: r.extra}
	if !s.value() {
		return false
	}
	return s.i == len(raw)
}

// scanner walks one JSON value; see isCanonical.
type scanner struct {
	b     []byte
	i     int
	extra map[string]bool
}

func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		s.i++
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !s.value() {
				return false
			}
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				return true
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
		}
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) lit(w string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

// str scans a string and returns its raw content; it refuses characters
// Go's encoder would write differently (control characters, U+2028/U+2029,
// invalid UTF-8) and, in keys, any escape.
func (s *scanner) str() (content []byte, ok bool) {
	s.i++ // opening quote
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			content = s.b[start:s.i]
			s.i++
			return content, true
		case c == '\\':
			if s.i+1 >= len(s.b) || strings.IndexByte(`"\/bfnrtu`, s.b[s.i+1]) < 0 || s.b[s.i+1] == '/' || s.b[s.i+1] == 'u' {
				return nil, false // \/ and \uXXXX are written differently by Go's encoder
			}
			s.i += 2
		case c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			s.i += n
		}
	}
	return nil, false
}

func (s *scanner) object() bool {
	s.i++ // {
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	var prev []byte
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		key, ok := s.str()
		if !ok || bytes.IndexByte(key, '\\') >= 0 || (prev != nil && bytes.Compare(prev, key) >= 0) || s.redacted(key) {
			return false
		}
		prev = key
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !s.value() {
			return false
		}
		if s.i >= len(s.b) {
			return false
		}
		if s.b[s.i] == '}' {
			s.i++
			return true
		}
		if s.b[s.i] != ',' {
			return false
		}
		s.i++
	}
}

// redacted reports whether key names a redacted field (case-insensitively).
// A key with non-ASCII bytes is reported as redacted so that it takes the
// slow path, whose Unicode lower-casing decides (e.g. a Kelvin sign K).
func (s *scanner) redacted(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return credentialName(string(key), s.extra, inData)
}

// Canonical returns raw as the journal stores a JSON answer that holds no
// credential: keys sorted, numbers as written, no HTML escaping, no
// insignificant space (raw itself when it is not one JSON value). A caller
// that hands a journaled answer on (an agent sending a tool's result to its
// model) MUST hand on this form, so that a replay, which answers the
// stored form, sees exactly what the live run saw.
func Canonical(raw json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
