package toolmeta

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Params is the JSON Schema of a tool's declared parameters (the same one
// its meta.json `parameters` holds), ready to validate arguments against.
// It is immutable and safe for concurrent use.
type Params struct {
	s       *schema
	trivial bool // accepts any JSON object: validating costs nothing
}

// ParamsOf returns the parameters schema of the tool source src: the type
// of its default export's first parameter, derived by the same code that
// writes meta.json. It returns nil when the tool declares no parameter type
// (no parameter, an untyped one, or an untyped destructuring pattern): its
// arguments are then not validated.
//
// IMPORTANT: it parses src (tree-sitter, tens of microseconds for a small
// tool, unless the checker has just parsed the same source: tsparse.Shared);
// callers running a tool many times MUST cache the result by content hash.
func ParamsOf(src []byte) *Params {
	m := extract(src, false)
	if m.params == nil || !m.declared {
		return nil
	}
	return &Params{s: m.params, trivial: accepts(m.params)}
}

// accepts reports whether s (an object schema) accepts every JSON object.
func accepts(s *schema) bool {
	if len(s.Required) > 0 || s.AdditionalProperties != nil && !anything(s.AdditionalProperties) {
		return false
	}
	for _, p := range s.Properties {
		if !anything(p.Schema) {
			return false
		}
	}
	return true
}

// anything reports whether s accepts every JSON value.
func anything(s *schema) bool {
	return s.Type == "" && len(s.Enum) == 0 && len(s.AnyOf) == 0
}

// ArgsError says which argument did not match the tool's declared
// parameters: Path is where (args.name, args.items[2].id), Expected what the
// type asks for, Got what was passed.
type ArgsError struct {
	Path     string
	Expected string
	Got      string
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("%s: expected %s, got %s", e.Path, e.Expected, e.Got)
}

// Validate checks args, a JSON object (empty means {}), against p: JSON
// types, required properties, enums (literal types), arrays and nested
// objects. A property the type does not name is allowed (TypeScript's
// structural typing), null is valid only where the type includes null, and
// an absent property only where it is optional (`?`) or includes undefined.
// It returns nil or an *ArgsError for the first mismatch. A nil p accepts
// everything.
func (p *Params) Validate(args []byte) error {
	if p == nil || p.trivial {
		return nil
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = []byte("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return &ArgsError{Path: "args", Expected: "a JSON object", Got: "text that is not JSON (" + err.Error() + ")"}
	}
	return check(p.s, v, "args")
}

// check validates v against s at path: its type, its enum, then its
// elements or properties.
func check(s *schema, v any, path string) error {
	if v == nil && (s.nullable || s.Type == "null") {
		return nil
	}
	if len(s.AnyOf) > 0 {
		return checkAnyOf(s, v, path)
	}
	if s.Type != "" && !hasType(s.Type, v) {
		return &ArgsError{Path: path, Expected: expected(s), Got: kindOf(v)}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		return &ArgsError{Path: path, Expected: expected(s), Got: valueText(v)}
	}
	switch x := v.(type) {
	case []any:
		return checkItems(s, x, path)
	case map[string]any:
		if s.Type != "object" {
			return nil
		}
		return checkObject(s, x, path)
	}
	return nil
}

// checkAnyOf validates v against the first member of s.AnyOf it matches.
func checkAnyOf(s *schema, v any, path string) error {
	for _, m := range s.AnyOf {
		if check(m, v, path) == nil {
			return nil
		}
	}
	return &ArgsError{Path: path, Expected: expected(s), Got: kindOf(v)}
}

// checkItems validates each element of an array against s.Items.
func checkItems(s *schema, x []any, path string) error {
	if s.Items == nil || anything(s.Items) {
		return nil
	}
	for i, e := range x {
		if err := check(s.Items, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

// checkObject validates an object's named properties (a required one
// missing is an error), then its other members against
// s.AdditionalProperties.
func checkObject(s *schema, x map[string]any, path string) error {
	for _, p := range s.Properties {
		if err := checkProperty(s, p, x, path); err != nil {
			return err
		}
	}
	if s.AdditionalProperties == nil || anything(s.AdditionalProperties) {
		return nil
	}
	return checkAdditional(s, x, path)
}

// checkProperty validates the named property p of the object x (of schema
// s): absent, it must be optional.
func checkProperty(s *schema, p property, x map[string]any, path string) error {
	e, present := x[p.Name]
	if present {
		return check(p.Schema, e, member(path, p.Name))
	}
	if p.Schema.optional || !slices.Contains(s.Required, p.Name) {
		return nil
	}
	return &ArgsError{Path: member(path, p.Name), Expected: expected(p.Schema), Got: "nothing (the property is required)"}
}

// checkAdditional validates the members of x that s does not name against
// s.AdditionalProperties, in key order (the same error every time).
func checkAdditional(s *schema, x map[string]any, path string) error {
	keys := make([]string, 0, len(x))
	for k := range x {
		if !slices.ContainsFunc(s.Properties, func(p property) bool { return p.Name == k }) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := check(s.AdditionalProperties, x[k], member(path, k)); err != nil {
			return err
		}
	}
	return nil
}

// member is path.name, or path["name"] when name is not an identifier.
func member(path, name string) string {
	if isIdentifier(name) {
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

// isIdentifier reports whether name is a JavaScript identifier (ASCII).
func isIdentifier(name string) bool {
	for i, c := range name {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return name != ""
}
func hasType(t string, v any) bool { return !jsonTypes[t] || kindOf(v) == t }

// jsonTypes are the JSON Schema types kindOf names.
var jsonTypes = map[string]bool{"number": true, "string": true, "boolean": true, "null": true, "array": true, "object": true}

// kindOf names the JSON type of v.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// valueText writes v as JSON, shortened.
func valueText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// expected says in words what s accepts: "string", "one of \"a\", \"b\"",
// "number or string", "array of number", "string or null".
func expected(s *schema) string {
	out := expectedValue(s)
	if s.nullable {
		out += " or null"
	}
	return out
}

// expectedValue is expected without null.
func expectedValue(s *schema) string {
	switch {
	case len(s.Enum) == 1:
		return valueText(s.Enum[0])
	case len(s.Enum) > 1:
		return "one of " + joinEach(s.Enum, valueText, ", ")
	case len(s.AnyOf) > 0:
		return joinEach(s.AnyOf, expected, " or ")
	case s.Type == "array" && s.Items != nil && !anything(s.Items):
		return "array of " + expected(s.Items)
	case s.Type != "":
		return s.Type
	}
	return "any value"
}

// joinEach joins the texts of xs with sep.
func joinEach[T any](xs []T, text func(T) string, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = text(x)
	}
	return strings.Join(parts, sep)
}
