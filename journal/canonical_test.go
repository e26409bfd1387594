package journal

import (
	"bytes"
	"encoding/json"
	"testing"
)

// slowCanonical is the redactor's slow path alone.
func slowCanonical(r *redactor, raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(r.walk(v)) != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FuzzCanonicalFastPath: whenever the fast path accepts bytes as canonical,
// the slow path must produce exactly those bytes; so the journal stores and
// compares the same form whichever path ran.
func FuzzCanonicalFastPath(f *testing.F) {
	for _, s := range []string{`{"path":"a.txt"}`, `{"content":"x","path":"/tmp/x"}`, `{"b":1,"a":2}`, `{"a":{"z":[1,2,{"k":null}]},"b":"é"}`,
		`{"Authorization":"x"}`, `{"a":"\u2028"}`, `{"a":"<&>"}`, `[1,"x",true,false,null,-1.5e10]`, `{"a":1,"a":2}`, `{"a":"\/"}`, `"s"`, `{ "a":1}`, `{"k":"tab\t"}`,
		`{"url":"https://u:p@h/?api_key=x&a=1"}`, `{"a":"?token=[REDACTED]&b=2"}`, `{"Sort_Key":1,"x-api-key":"v"}`, `{"apiKey":"v","max_tokens":3}`, `{"u":"s://a:[REDACTED]@h;sig=1"}`} {
		f.Add([]byte(s))
	}
	r := newRedactor(nil)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !r.isCanonical(raw) {
			return
		}
		if slow := slowCanonical(r, raw); !bytes.Equal(slow, raw) {
			t.Fatalf("fast path kept %q, slow path gives %q", raw, slow)
		}
	})
}

func TestCanonicalFastPathCases(t *testing.T) {
	r := newRedactor(nil)
	for raw, want := range map[string]bool{
		`{"path":"a.txt"}`:                  true,
		`{"content":"x","path":"/tmp/x"}`:   true,
		`{"path":"/tmp/x","content":"x"}`:   false, // unsorted
		`{"a":1,"a":2}`:                     false, // duplicate
		`{"headers":{"Authorization":"x"}}`: false, // redacted field
		`{ "a":1}`:                          false, // whitespace
		`{"q":"a < b & c"}`:                 true,
		`{"a":"\u00e9"}`:                    false, // an escape Go writes as é
	} {
		if got := r.isCanonical([]byte(raw)); got != want {
			t.Errorf("isCanonical(%s) = %v, want %v", raw, got, want)
		}
	}
}
