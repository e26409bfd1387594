package driver

import (
	"encoding/json"
	"testing"
)

// TestEncodeStringIsEncode checks the fast encoding of file content against
// json.Marshal's, byte for byte: every single byte, and mixed text.
func TestEncodeStringIsEncode(t *testing.T) {
	cases := []string{"", "plain text", "a<b>&c", "quote\"back\\slash", "tab\tnl\n", "héllo", "\u2028", "\xff\xfe", "0123456789abcdef"}
	for c := 0; c < 256; c++ {
		cases = append(cases, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range cases {
		fast, err1 := encodeString([]byte(s))
		slow, err2 := encode(s)
		if err1 != nil || err2 != nil || string(fast) != string(slow) {
			t.Fatalf("%q: fast %s (%v), json.Marshal %s (%v)", s, fast, err1, slow, err2)
		}
	}
}

// TestDecodeOneIsDecode checks the fast request decoding against decode's:
// it answers only what decode would answer, and leaves the rest to it.
func TestDecodeOneIsDecode(t *testing.T) {
	for _, req := range []string{`{"path":"data.txt"}`, `{"path":""}`, `{"path":"d/é.txt"}`, `{"path":"a\"b"}`, `{"path":"a\\u0041"}`,
		`{"path":"x","extra":1}`, `{"path": "x"}`, `{"path":1}`, `{"dir":"x"}`, `{"path":"x"} `, `{"path":"` + "\xff" + `"}`, `{"path":"a` + "\n" + `"}`, `{}`, ``} {
		v, ok := decodeOne(json.RawMessage(req), "path")
		var a struct {
			Path string `json:"path"`
		}
		err := decode("read_file", json.RawMessage(req), &a)
		if ok && (err != nil || a.Path != v) {
			t.Fatalf("%s: fast path gave %q, decode %q (%v)", req, v, a.Path, err)
		}
	}
	if v, ok := decodeOne(json.RawMessage(`{"path":"data.txt"}`), "path"); !ok || v != "data.txt" {
		t.Fatalf("the common request is not on the fast path: %q %v", v, ok)
	}
}
