package workerside

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/driver"
)

// roundTrip writes f and reads it back; jsonForm reports whether it was
// written as JSON rather than in the binary form.
func roundTrip(t *testing.T, f *Frame) (got *Frame, jsonForm bool) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteFrame(&buf, f); err != nil {
		t.Fatalf("writeFrame(%+v): %v", f, err)
	}
	jsonForm = buf.Bytes()[4] == '{'
	got, err := ReadFrame(bufio.NewReader(&buf))
	if err != nil {
		t.Fatalf("readFrame(%+v): %v", f, err)
	}
	return got, jsonForm
}

// asJSON is what the frame becomes through the JSON form alone.
func asJSON(t *testing.T, f *Frame) *Frame {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	g := new(Frame)
	if err := json.Unmarshal(b, g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestHotFrames: every call, rec and reply frame reads back exactly as its
// JSON form would (the binary form is a faster encoding, not a new meaning),
// and a frame whose bytes JSON would change is written as JSON.
func TestHotFrames(t *testing.T) {
	call := &driver.Call{Seq: 7, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{"path":"data.txt"}`)}
	for _, tc := range []struct {
		name   string
		f      *Frame
		binary bool
	}{
		{"call", &Frame{T: "call", ID: 3, Call: call}, true},
		{"call without request", &Frame{T: "call", ID: 1 << 40, Call: &driver.Call{Seq: 1, Driver: "clock", Op: "now"}}, true},
		{"rec", &Frame{T: "rec", ID: 2, Call: &driver.Call{Seq: 9, Driver: "clock", Op: "now"}, Val: json.RawMessage(`1700000000000`)}, true},
		{"reply", &Frame{T: "reply", ID: 4, Val: json.RawMessage(`"0123456789abcdef"`)}, true},
		{"reply with escapes", &Frame{T: "reply", ID: 4, Val: json.RawMessage(`"a\"b\\c\u00e9 ü"`)}, true},
		{"empty reply", &Frame{T: "reply", ID: 5}, true},
		{"error reply", &Frame{T: "reply", ID: 6, Err: &driver.Error{Code: driver.CodeNotFound, Message: "read x: no such file; list_files shows what exists"}}, true},
		{"error reply, invalid UTF-8", &Frame{T: "reply", ID: 6, Err: &driver.Error{Code: "io", Message: "bad \xff\xfe byte"}}, true},
		{"call, invalid UTF-8 op", &Frame{T: "call", ID: 3, Call: &driver.Call{Seq: 1, Driver: "fs", Op: "r\xffead"}}, true},
		{"reply JSON would escape", &Frame{T: "reply", ID: 7, Val: json.RawMessage(`"<b>&"`)}, false},
		{"reply JSON would compact", &Frame{T: "reply", ID: 8, Val: json.RawMessage(`{"a": 1}`)}, false},
		{"reply with U+2028", &Frame{T: "reply", ID: 8, Val: json.RawMessage("\"a\u2028b\"")}, false},
		{"reply with a module", &Frame{T: "reply", ID: 9, Mod: &sandbox.Module{}}, false},
		{"reply with value and error", &Frame{T: "reply", ID: 9, Val: json.RawMessage(`1`), Err: &driver.Error{Code: "io", Message: "x"}}, false},
		{"call with request whitespace", &Frame{T: "call", ID: 3, Call: &driver.Call{Seq: 1, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{"path": "a"}`)}}, false},
		{"done", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{}}, false},
		{"pinnable reply", &Frame{T: "reply", ID: 4, Val: json.RawMessage(`"one"`), Pin: true}, true},
		{"pinnable reply JSON would escape", &Frame{T: "reply", ID: 4, Val: json.RawMessage(`"<b>"`), Pin: true}, false},
		{"pinnable error reply", &Frame{T: "reply", ID: 6, Err: &driver.Error{Code: "io", Message: "x"}, Pin: true}, false},
		{"run with a pin plan", &Frame{T: "run", ID: 3, Snap: &PinPlan{Follows: true, Held: []uint64{1, 4}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, jsonForm := roundTrip(t, tc.f)
			if jsonForm == tc.binary {
				t.Errorf("written as JSON: %v, want %v", jsonForm, !tc.binary)
			}
			if want := asJSON(t, tc.f); !reflect.DeepEqual(got, want) {
				t.Errorf("read back %+v, the JSON form reads %+v", got, want)
			}
		})
	}
	// Invalid JSON is refused as it was: by the writer, with json's error.
	var buf bytes.Buffer
	if err := WriteFrame(&buf, &Frame{T: "reply", ID: 1, Val: json.RawMessage(`{"a"`)}); err == nil || buf.Len() != 0 {
		t.Errorf("an invalid value was written (%v, %d bytes)", err, buf.Len())
	}
}

// TestHotFrameMalformed: a binary frame a hostile worker forges is refused
// as malformed, never read past its end or accepted with invalid JSON.
func TestHotFrameMalformed(t *testing.T) {
	good := appendHotOK(t, &Frame{T: "rec", ID: 2, Call: &driver.Call{Seq: 9, Driver: "clock", Op: "now"}, Val: json.RawMessage(`17`)})
	cases := map[string][]byte{
		"no kind":          {hotMark},
		"unknown kind":     {hotMark, 'z', 1},
		"truncated":        good[:len(good)-1],
		"trailing bytes":   append(append([]byte{}, good...), 0),
		"overlong varint":  append([]byte{hotMark, 'v'}, bytes.Repeat([]byte{0xff}, 11)...),
		"length past end":  {hotMark, 'v', 1, 100, '1'},
		"invalid value":    {hotMark, 'v', 1, 2, '{', '"'},
		"invalid request":  {hotMark, 'c', 1, 1, 2, 'f', 's', 1, 'x', 3, 'n', 'o', 'p'},
		"huge length":      append([]byte{hotMark, 'v', 1}, binary.AppendUvarint(nil, 1<<62)...),
		"error, truncated": {hotMark, 'e', 1, 2, 'i', 'o', 5, 'x'},
	}
	for name, b := range cases {
		var buf bytes.Buffer
		binary.Write(&buf, binary.BigEndian, uint32(len(b)))
		buf.Write(b)
		if f, err := ReadFrame(bufio.NewReader(&buf)); err == nil || !strings.HasPrefix(err.Error(), "malformed frame: ") {
			t.Errorf("%s: read %+v, %v; want a malformed frame", name, f, err)
		}
	}
}

func appendHotOK(t *testing.T, f *Frame) []byte {
	b, ok := appendHot(nil, f)
	if !ok {
		t.Fatalf("%+v has no binary form", f)
	}
	return b
}

// FuzzHotFrame: decoding any bytes as a binary frame fails or yields a
// frame whose request and value are valid JSON, without panicking.
func FuzzHotFrame(f *testing.F) {
	f.Add([]byte{hotMark, 'c', 1, 1, 2, 'f', 's', 1, 'x', 2, '{', '}'})
	f.Add([]byte{hotMark, 'e', 1, 2, 'i', 'o', 1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := decodeHot(b)
		if err != nil {
			return
		}
		if fr.Call != nil && len(fr.Call.Request) > 0 && !json.Valid(fr.Call.Request) || len(fr.Val) > 0 && !json.Valid(fr.Val) {
			t.Fatalf("accepted invalid JSON: %+v", fr)
		}
	})
}
