package pii

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// JSON returns doc with every detected value in its strings (object keys
// included) replaced by its token. Numbers, booleans and the document's
// shape are kept byte for byte; doc itself is returned, and nothing is
// allocated, when nothing matches.
func (t *Tokenizer) JSON(doc []byte) ([]byte, error) {
	if t == nil || len(t.dets) == 0 {
		return doc, nil
	}
	var bt batch
	out, err := walkStrings(doc, func(dst, raw []byte, escaped bool) ([]byte, bool, error) {
		if !escaped {
			ms := t.matches(raw)
			if ms == nil {
				return dst, false, nil
			}
			// Tokens need no escaping: splice them into the raw string.
			out, err := t.replace(append(dst, '"'), raw, ms, &bt)
			if err != nil {
				return nil, false, err
			}
			return append(out, '"'), true, nil
		}
		s, err := unquote(raw)
		if err != nil {
			return dst, false, nil // not a JSON string: leave it
		}
		ms := t.matches([]byte(s))
		if ms == nil {
			return dst, false, nil
		}
		out, err := t.replace(nil, []byte(s), ms, &bt)
		if err != nil {
			return nil, false, err
		}
		return appendQuoted(dst, string(out)), true, nil
	})
	if err == nil {
		err = t.flush(&bt) // every new token is in the map before the data leaves
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Text tokenizes s as JSON (JSON) when it is a JSON document, so that
// escapes are read as such, else as plain text (String).
func (t *Tokenizer) Text(s string) (string, error) {
	if t == nil || len(t.dets) == 0 {
		return s, nil
	}
	trimmed := strings.TrimSpace(s)
	if trimmed != "" && strings.IndexByte(`{["`, trimmed[0]) >= 0 && json.Valid([]byte(s)) {
		out, err := t.JSON([]byte(s))
		return string(out), err
	}
	return t.String(s)
}

// Restore returns doc with every token in its strings replaced by the value
// it stands for. A string that is an absolute http(s) URL gets the value
// percent-encoded. A token the map does not have (or whose value does not
// hash to it) is an ErrUnknownToken: nothing is restored. doc itself is
// returned when it holds no token.
func (t *Tokenizer) Restore(doc []byte) ([]byte, error) {
	return t.restoreDoc(doc, nil)
}

// restoreDoc is Restore; the pairs restored are added to got when it is not
// nil (once each).
func (t *Tokenizer) restoreDoc(doc []byte, got *[]Pair) ([]byte, error) {
	if t == nil || !mayHoldToken(doc) {
		return doc, nil
	}
	return walkStrings(doc, func(dst, raw []byte, escaped bool) ([]byte, bool, error) {
		if !mayHoldToken(raw) {
			return dst, false, nil
		}
		s := string(raw)
		if escaped {
			var err error
			if s, err = unquote(raw); err != nil {
				return dst, false, nil
			}
		}
		out, n, err := t.restoreString(s, got)
		if err != nil || n == 0 {
			return dst, false, err
		}
		return appendQuoted(dst, out), true, nil
	})
}

// RestoreString returns s with its tokens replaced by their values (see
// Restore) and how many it replaced.
func (t *Tokenizer) RestoreString(s string) (string, int, error) {
	return t.restoreString(s, nil)
}

func (t *Tokenizer) restoreString(s string, got *[]Pair) (string, int, error) {
	if t == nil || !mayHoldToken([]byte(s)) {
		return s, 0, nil
	}
	ms := tokenRE().FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s, 0, nil
	}
	isURL := strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
	var b strings.Builder
	last := 0
	for _, m := range ms {
		kind := strings.ToUpper(s[m[2]:m[3]])
		tok := "PII_" + kind + "_" + strings.ToLower(s[m[4]:m[5]])
		v, err := t.lookup(kind, tok)
		if err != nil {
			return "", 0, err
		}
		if got != nil && !slices.Contains(*got, Pair{Token: tok, Value: v}) {
			*got = append(*got, Pair{Token: tok, Value: v})
		}
		if isURL {
			v = strings.ReplaceAll(url.QueryEscape(v), "+", "%20")
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(v)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), len(ms), nil
}

// lookup returns the value of tok, checked against its HMAC.
func (t *Tokenizer) lookup(kind, tok string) (string, error) {
	if v, ok := t.known.Load(tok); ok {
		return v.(string), nil
	}
	v, ok, err := t.mapping.Get(tok)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s is not in the token map (it was deleted, or the token was made with another key or written by hand); the call was not sent", ErrUnknownToken, tok)
	}
	if t.token(kind, v) != tok {
		return "", fmt.Errorf("%w: the token map's value for %s does not hash to it (the map or the key was changed); the call was not sent", ErrUnknownToken, tok)
	}
	t.known.Store(tok, v)
	return v, nil
}

// walkStrings calls f on the contents (between the quotes, still escaped
// when escaped is true) of every JSON string in doc. When f replaces the
// string it appends the replacement's JSON form, quotes included, to dst
// and reports true; otherwise it MUST return dst as it was. When nothing in
// doc is replaced, doc itself is returned and nothing is allocated.
func walkStrings(doc []byte, f func(dst, raw []byte, escaped bool) ([]byte, bool, error)) ([]byte, error) {
	var out []byte // nil until the first replacement
	copied := 0    // doc[:copied] is in out
	for i := 0; i < len(doc); i++ {
		if doc[i] != '"' {
			continue
		}
		escaped := false
		j := i + 1
		for ; j < len(doc); j++ {
			if doc[j] == '\\' {
				escaped = true
				j++
				continue
			}
			if doc[j] == '"' {
				break
			}
		}
		if j >= len(doc) {
			break // an unterminated string: leave the rest
		}
		if out != nil {
			out = append(out, doc[copied:i]...)
			copied = i
		}
		rep, changed, err := f(out, doc[i+1:j], escaped)
		if err != nil {
			return nil, err
		}
		if changed {
			if out == nil {
				out = make([]byte, 0, len(doc)+len(rep)+16)
				out = append(append(out, doc[:i]...), rep...)
			} else {
				out = rep
			}
			copied = j + 1
		}
		i = j
	}
	if out == nil {
		return doc, nil
	}
	return append(out, doc[copied:]...), nil
}

// unquote decodes the contents of a JSON string.
func unquote(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

// appendQuoted appends s as a JSON string (quotes included), without
// HTML escaping.
func appendQuoted(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}
