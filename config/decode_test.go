package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// counted counts how often a value of agentos.json is decoded.
type counted struct{}

var decodes int

func (c *counted) UnmarshalJSON(b []byte) error {
	decodes++
	var v int
	return json.Unmarshal(b, &v)
}

type countedSchema struct {
	A counted             `json:"a"`
	B struct{ C counted } `json:"b"`
	L []counted           `json:"l"`
	M map[string]counted  `json:"m"`
	P *counted            `json:"p"`
}

// Issue 27: the file was decoded three times (once into an any to find
// syntax errors, once value by value by the positional walk, once more
// whole into the struct). Each value of the file is decoded exactly once,
// into its field.
func TestDecodeDecodesEachValueOnce(t *testing.T) {
	decodes = 0
	var s countedSchema
	b := []byte(`{"a": 1, "b": {"C": 2}, "l": [3, 4], "m": {"x": 5}, "p": 6}`)
	if err := Decode(File, b, &s); err != nil {
		t.Fatal(err)
	}
	if decodes != 6 {
		t.Fatalf("6 values decoded %d times: the file MUST be decoded once", decodes)
	}
	if len(s.L) != 2 || len(s.M) != 1 || s.P == nil {
		t.Fatalf("decoded %+v", s)
	}
}

// Every refusal is an *Error with the line, column and key, and a value a
// field refuses keeps the field's own message.
func TestDecodeRefusesWithPosition(t *testing.T) {
	type schema struct {
		Limits struct {
			Timeout Duration `json:"timeout"`
		} `json:"limits"`
		Dirs []string `json:"dirs"`
	}
	for _, tc := range []struct{ body, where, want string }{
		{"{\n \"limits\": {\"timeout\": 5}}", ":2:24:", "limits.timeout: a duration must be a string"},
		{`{"limits": {"timout": "5s"}}`, ":1:13:", `unknown field "timout" in limits: did you mean "timeout"?`},
		{`{"dirs": "a"}`, ":1:10:", "dirs must be an array [...] of strings, not the string \"a\""},
		{`{"dirs": ["a",`, ":1:15:", "unexpected EOF"},
		{`{"dirs": [], "dirs": []}`, ":1:14:", "dirs is set twice (first at 1:2)"},
	} {
		var s schema
		err := Decode(File, []byte(tc.body), &s)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), File+tc.where) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), Doc) {
			t.Errorf("%s: got %v, want %s%s ... %s", tc.body, err, File, tc.where, tc.want)
		}
	}
}

// An empty list is no list: a section of empty lists is the zero section.
func TestDecodeEmptyListIsNone(t *testing.T) {
	var s struct {
		S struct {
			Seeds []string          `json:"seeds,omitempty"`
			M     map[string]string `json:"m,omitempty"`
		} `json:"s,omitzero"`
	}
	if err := Decode(File, []byte(`{"s": {"seeds": [], "m": {}}}`), &s); err != nil || s.S.Seeds != nil || s.S.M != nil {
		t.Fatalf("%+v %v", s, err)
	}
}
