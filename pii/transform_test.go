package pii

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// transformations returns what a driver computing on v may answer.
func transformations(v string) map[string]string {
	b := []byte("Dear " + v + ", hello")
	return map[string]string{
		"(at)":           strings.NewReplacer("@", " (at) ", ".", " (dot) ").Replace(v),
		"[at] AT DOT":    strings.ToUpper(strings.NewReplacer("@", " [at] ", ".", " dot ").Replace(v)),
		"separators out": strings.NewReplacer("@", "", ".", "", " ", "", "+", "").Replace(v),
		"other seps":     strings.NewReplacer("@", "_", ".", "-", " ", "/").Replace(v),
		"reversed":       reverseString(v),
		"hex":            hex.EncodeToString([]byte(v)),
		"HEX upper":      strings.ToUpper(hex.EncodeToString([]byte(strings.ToUpper(v)))),
		"base64":         base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url raw":  base64.RawURLEncoding.EncodeToString([]byte(strings.ToLower(v))),
		"base64 inside":  base64.StdEncoding.EncodeToString(b),
		"base64 inside1": base64.StdEncoding.EncodeToString(b[1:]),
		"base64 inside2": base64.StdEncoding.EncodeToString(b[2:]),
	}
}

// Issue 25 item 5: every common transformation of a restored value is
// masked wherever it stands in a string, and what remains holds no part
// of the value that a reader could decode.
func TestMaskTransformations(t *testing.T) {
	for _, v := range []string{"ada.lovelace@example.com", "+44 20 7946 0958", "Ada Lovelace", "Zoë O'Brien"} {
		pairs := []Pair{{Token: "PII_X_000000000001", Value: v}, {Token: "PII_X_000000000002", Value: "other@example.com"}}
		for name, sp := range transformations(v) {
			for _, ctx := range []string{"%s", "value: %s.", `{"q":"%s"}`, "(%s)"} {
				in := fmt.Sprintf(ctx, sp)
				out := mask(in, pairs)
				if !strings.Contains(out, "PII_X_000000000001") {
					t.Errorf("%q as %s in %q: masked to %q, want the token", v, name, in, out)
					continue
				}
				for _, part := range strings.FieldsFunc(v, func(r rune) bool { return !alnum(r) }) {
					if len(part) >= 4 && strings.Contains(strings.ToLower(out), strings.ToLower(part)) {
						t.Errorf("%q as %s: masked to %q, which still holds %q", v, name, out, part)
					}
				}
			}
		}
	}
}

// The phone's + written as 00 (international dialling) is its
// transformation too.
func TestMaskPhoneDialPrefix(t *testing.T) {
	pairs := []Pair{{Token: "PII_PHONE_000000000001", Value: "+44 20 7946 0958"}}
	if got := mask("call 00442079460958 now", pairs); got != "call PII_PHONE_000000000001 now" {
		t.Errorf("masked to %q", got)
	}
}

// What is not the value stays: other words, the value's parts alone, a
// value inside a longer word, a value too short to look for transformed.
func TestMaskTransformedKeepsOthers(t *testing.T) {
	pairs := []Pair{{Token: "PII_X_000000000001", Value: "ada.lovelace@example.com"}, {Token: "PII_X_000000000002", Value: "Bo Li"}}
	for _, in := range []string{
		"example.com is a domain; lovelace is a name",
		"xadalovelaceexamplecomx",
		"ada at lovelace",
		"Bo-Li and boli",
		hex.EncodeToString([]byte("ada.lovelace@example.org")),
	} {
		if got := mask(in, pairs); got != in {
			t.Errorf("mask(%q) = %q, want it unchanged", in, got)
		}
	}
}
