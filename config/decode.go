package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Error is a mistake in agentos.json: where it is (line and column,
// 1-based, 0 when unknown), under which key, and what was expected.
type Error struct {
	File   string // the file, as given
	Line   int    // 1-based; 0: not tied to a position
	Column int    // 1-based, in bytes
	Key    string // the dotted key, e.g. "limits.timeout" ("" at the top)
	Msg    string // what is wrong and what was expected
}

// Error reads "FILE:LINE:COL: MSG (every key of agentos.json: docs/CONFIG.md)".
func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	return fmt.Sprintf("%s: %s (every key of %s is documented in %s)", where, e.Msg, File, Doc)
}

// Decode reads b (the content of the file at path) into v, a pointer to
// the schema's struct. Every
// mistake is a *Error naming the line and column, the key, and what
// was expected: a syntax error or a truncated file, an unknown key (with the
// nearest known key suggested), a value of the wrong type.
func Decode(path string, b []byte, v any) error {
	if !json.Valid(b) {
		// A scan, not a decode. On a document that is not JSON,
		// Unmarshal stops at that same scan and says where.
		return syntaxError(path, b, json.Unmarshal(b, new(any)))
	}
	dst := reflect.ValueOf(v).Elem()
	w := &configWalker{path: path, b: b, dec: json.NewDecoder(bytes.NewReader(b))}
	if err := w.value(dst, ""); err != nil {
		return err
	}
	emptyToNil(dst)
	return nil
}

// emptyToNil sets every empty slice and map under v to nil, so "seeds": []
// means what an absent key means and a section holding only empty lists
// is the zero section (written back, it is left out, as omitzero says).
func emptyToNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				emptyToNil(v.Field(i))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			emptyToNil(v.Elem())
		}
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 && !v.IsNil() && v.CanSet() {
			v.SetZero()
			return
		}
		if v.Kind() == reflect.Slice {
			for i := range v.Len() {
				emptyToNil(v.Index(i))
			}
		} else {
			for _, k := range v.MapKeys() {
				e := reflect.New(v.Type().Elem()).Elem()
				e.Set(v.MapIndex(k))
				emptyToNil(e)
				v.SetMapIndex(k, e)
			}
		}
	}
}

// syntaxError explains a JSON syntax error at its line and column.
func syntaxError(path string, b []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &Error{File: path, Msg: err.Error()}
	}
	if se.Offset >= int64(len(bytes.TrimRight(b, " \t\r\n"))) && strings.Contains(se.Error(), "end of JSON input") {
		line, col := position(b, len(bytes.TrimRight(b, " \t\r\n")))
		msg := "unexpected EOF: the file ends before its JSON is complete"
		if open := unclosed(b); open != "" {
			msg += "; expected " + open
		}
		return &Error{File: path, Line: line, Column: col, Msg: msg + " (is the file truncated?)"}
	}
	off := int(se.Offset) - 1 // the offending byte
	off = max(off, 0)
	line, col := position(b, off)
	msg := strings.TrimPrefix(se.Error(), "json: ")
	for _, h := range syntaxHints {
		if strings.Contains(msg, h.phrase) {
			msg += "; expected " + h.expected
			break
		}
	}
	return &Error{File: path, Line: line, Column: col, Msg: fmt.Sprintf("%s (%s)", msg, lineText(b, off))}
}

// syntaxHints say what was expected where encoding/json's syntax errors say
// what it was looking at.
var syntaxHints = []struct{ phrase, expected string }{
	{"looking for beginning of object key string", `a key in double quotes (JSON has no comments and no comma before '}')`},
	{"after object key:value pair", `',' before the next key, or '}'`},
	{"after object key", `':' after the key`},
	{"after array element", `',' before the next element, or ']'`},
	{"looking for beginning of value", `a value: a string in double quotes, a number, true, false, null, an object or an array (no comma before ']' or '}')`},
	{"after top-level value", "nothing after the closing '}' of the settings"},
	{"in string literal", "a closing '\"' on the same line (control characters must be escaped)"},
}

// unclosed says what a truncated document still needs, e.g. `"}" to close
// the object opened at 1:1`.
func unclosed(b []byte) string {
	type open struct {
		c   byte
		off int
	}
	var stack []open
	inString, escaped := false, false
	for i, ch := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case inString && ch == '"':
			inString = false
		case inString:
		case ch == '"':
			inString = true
		case ch == '{' || ch == '[':
			stack = append(stack, open{ch, i})
		case (ch == '}' || ch == ']') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if inString {
		return `a closing '"' for the string`
	}
	if len(stack) == 0 {
		return ""
	}
	var parts []string
	for i := len(stack) - 1; i >= 0; i-- {
		line, col := position(b, stack[i].off)
		if stack[i].c == '{' {
			parts = append(parts, fmt.Sprintf(`'}' to close the object opened at %d:%d`, line, col))
		} else {
			parts = append(parts, fmt.Sprintf(`']' to close the array opened at %d:%d`, line, col))
		}
	}
	return strings.Join(parts, ", then ")
}

// position returns the 1-based line and column of byte offset off.
func position(b []byte, off int) (line, col int) {
	off = min(off, len(b))
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	return line, off - bytes.LastIndexByte(b[:off], '\n')
}

// lineText quotes the line holding offset off, for context.
func lineText(b []byte, off int) string {
	off = min(off, len(b))
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	end := bytes.IndexByte(b[off:], '\n')
	if end < 0 {
		end = len(b) - off
	}
	s := strings.TrimSpace(string(b[start : off+end]))
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("the line reads %q", s)
}

// configWalker walks the document token by token along the schema's type,
// checking every key and every value's type with its position, and
// decodes each value into its field.
type configWalker struct {
	path string
	b    []byte
	dec  *json.Decoder
}

// at returns the position of the next token: past whitespace, ',' and ':'.
func (w *configWalker) at() (line, col int) {
	off := int(w.dec.InputOffset())
	for off < len(w.b) && strings.IndexByte(" \t\r\n,:", w.b[off]) >= 0 {
		off++
	}
	return position(w.b, off)
}

func (w *configWalker) fail(line, col int, key, format string, args ...any) error {
	return &Error{File: w.path, Line: line, Column: col, Key: key, Msg: fmt.Sprintf(format, args...)}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value checks the next value against dst's type and decodes it into dst
// (addressable, zero); key is its dotted key. Each value is decoded once,
// straight into its field.
func (w *configWalker) value(dst reflect.Value, key string) error {
	line, col := w.at()
	t := dst.Type()
	custom := reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
	switch {
	case !custom && t.Kind() == reflect.Struct:
		return w.object(line, col, key, func(name string, kl, kc int) error {
			f, ok := jsonField(t, name)
			if !ok {
				return w.unknown(kl, kc, key, name, jsonKeys(t))
			}
			return w.value(dst.FieldByIndex(f.Index), join(key, name))
		})
	case !custom && t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		return w.mapValue(dst, line, col, key)
	case !custom && t.Kind() == reflect.Slice:
		return w.slice(dst, line, col, key)
	}
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return w.fail(line, col, key, "%v", err)
	}
	if err := json.Unmarshal(raw, dst.Addr().Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return w.fail(line, col, key, "%s must be %s, not %s", keyName(key), expected(t), raw)
		}
		return w.fail(line, col, key, "%s: %v", keyName(key), err)
	}
	return nil
}

// mapValue decodes an object (or null) into the map dst, each entry
// checked against the map's element type.
func (w *configWalker) mapValue(dst reflect.Value, line, col int, key string) error {
	t := dst.Type()
	return w.object(line, col, key, func(name string, _, _ int) error {
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(t))
		}
		e := reflect.New(t.Elem()).Elem()
		if err := w.value(e, join(key, name)); err != nil {
			return err
		}
		dst.SetMapIndex(reflect.ValueOf(name).Convert(t.Key()), e)
		return nil
	})
}

// slice decodes an array (or null) into the slice dst, each element
// checked against the slice's element type.
func (w *configWalker) slice(dst reflect.Value, line, col int, key string) error {
	t := dst.Type()
	tok, err := w.dec.Token()
	if err != nil {
		return w.fail(line, col, key, "%v", err)
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return w.fail(line, col, key, "%s must be %s, not %s", keyName(key), expected(t), describe(tok))
	}
	for i := 0; w.dec.More(); i++ {
		e := reflect.New(t.Elem()).Elem()
		if err := w.value(e, fmt.Sprintf("%s[%d]", key, i)); err != nil {
			return err
		}
		dst.Set(reflect.Append(dst, e))
	}
	_, err = w.dec.Token()
	return err
}

// object walks a JSON object (or null), calling field for each key with
// the key's position.
func (w *configWalker) object(line, col int, key string, field func(name string, kl, kc int) error) error {
	tok, err := w.dec.Token()
	if err != nil {
		return w.fail(line, col, key, "%v", err)
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		what := "an object {...}"
		if key == "" {
			what = `one JSON object {...} holding the settings`
		}
		return w.fail(line, col, key, "%s must be %s, not %s", keyName(key), what, describe(tok))
	}
	seen := map[string][2]int{}
	for w.dec.More() {
		kl, kc := w.at()
		tok, err := w.dec.Token()
		if err != nil {
			return w.fail(kl, kc, key, "%v", err)
		}
		name := tok.(string)
		if first, dup := seen[name]; dup {
			// JSON decoding would keep the last silently: refuse instead.
			return w.fail(kl, kc, join(key, name), "%s is set twice (first at %d:%d): keep one", join(key, name), first[0], first[1])
		}
		seen[name] = [2]int{kl, kc}
		if err := field(name, kl, kc); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return w.fail(line, col, key, "%v", err)
	}
	return nil
}

// unknown refuses an unknown key, suggesting the nearest known one.
func (w *configWalker) unknown(line, col int, parent, name string, known []string) error {
	where := "at the top level"
	if parent != "" {
		where = "in " + parent
	}
	msg := fmt.Sprintf("unknown field %q %s", name, where)
	if near := nearest(name, known); near != "" {
		msg += fmt.Sprintf(": did you mean %q?", near)
	} else {
		msg += fmt.Sprintf(": the keys here are %s", strings.Join(known, ", "))
	}
	return w.fail(line, col, join(parent, name), "%s", msg)
}

// jsonField finds the field of struct t whose JSON key is name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if k, ok := jsonKey(f); ok && k == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonKey returns the JSON key of an exported field that is read from JSON.
func jsonKey(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

// jsonKeys lists the JSON keys of struct t, sorted.
func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if k, ok := jsonKey(t.Field(i)); ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// nearest returns the known key closest to name, "" when none is close.
func nearest(name string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		d := editDistance(strings.ToLower(name), k)
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > max(2, len(name)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func keyName(key string) string {
	if key == "" {
		return "the file"
	}
	return key
}

// expected describes the JSON a value of type t is written as.
func expected(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[Duration]():
		return `a duration string such as "5s" or "500ms"`
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice:
		return "an array [...] of " + plural(expected(t.Elem()))
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return "an object {...}"
	}
	return "a " + t.String()
}

// plural turns "a string" into "strings", "an object {...}" into "objects {...}".
func plural(what string) string {
	what = strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a ")
	noun, rest, _ := strings.Cut(what, " ")
	if rest != "" {
		rest = " " + rest
	}
	return noun + "s" + rest
}

// describe names the JSON token a value started with.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
