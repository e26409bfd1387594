package workerside

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"runtime"
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
		{"done", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{}}, true},
		{"done with logs and answered", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{Result: json.RawMessage(`{"n":55}`), Logs: []string{"a", "b\xff"}, Calls: 12}, Answered: []uint64{2, 9}}, true},
		{"done, empty logs and answered", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{Logs: []string{}}, Answered: []uint64{}}, true},
		{"done with an error", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{Err: &sandbox.Error{Kind: sandbox.KindTimeout, Message: "ran past 5s", Stack: "at f (x.ts:1)", Code: "E\xff"}}}, true},
		{"done JSON would escape", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{Result: json.RawMessage(`"<"`)}}, false},
		{"done with a pin", &Frame{T: "done", ID: 3, Out: &sandbox.Outcome{}, Pin: true}, false},
		{"run", sampleRun(), true},
		{"run, nil args and bindings", &Frame{T: "run", ID: 1, Job: &sandbox.Job{}}, true},
		{"run, empty bindings, local and plan", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage(`[]`), Bindings: []sandbox.Binding{}}, Local: []string{}, Snap: &PinPlan{Held: []uint64{}}}, true},
		{"run, nil and empty params", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage(`1`), Bindings: []sandbox.Binding{{Name: "a"}, {Name: "b", Params: []string{}}}}}, true},
		{"run, negative limits", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage(`{}`), Limits: sandbox.Limits{Timeout: -1, MemoryBytes: -5, MaxCallDepth: -1 << 30}}}, true},
		{"run, invalid UTF-8 source", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Entry: sandbox.Module{Path: "a\xff.ts", JS: "x\xfe"}, Args: json.RawMessage(`0`)}}, true},
		{"run, heap shared is not sent", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage(`0`), HeapShared: true}}, true},
		{"run, args JSON would compact", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage(`{"n": 1}`)}}, false},
		{"run with recorded answers", &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage(`0`)}, Ans: []Answer{{Seq: 1, Driver: "clock", Op: "now", Val: json.RawMessage(`1`)}}}, false},
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
	run := appendHotOK(t, &Frame{T: "run", ID: 2, Job: &sandbox.Job{Args: json.RawMessage(`0`)}})
	done := appendHotOK(t, &Frame{T: "done", ID: 2, Out: &sandbox.Outcome{Result: json.RawMessage(`1`)}, Answered: []uint64{3}})
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
		"run, truncated":   run[:len(run)-1],
		"run, trailing":    append(append([]byte{}, run...), 0),
		"run without args": {hotMark, 'j', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"run, bad flag":    append(append([]byte{}, run[:len(run)-1]...), 2),
		"run, huge count":  {hotMark, 'j', 1, 0, 0, 0, 1, '0', 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"done, truncated":  done[:len(done)-1],
		"done, bad result": {hotMark, 'd', 1, 1, '{', 0, 0, 0, 0},
		"done, huge logs":  {hotMark, 'd', 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
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
	if b, ok := appendHot(nil, sampleRun()); ok {
		f.Add(b)
	}
	f.Add([]byte{hotMark, 'd', 1, 1, '1', 2, 1, 'x', 1, 1, 'k', 0, 0, 0, 3, 1, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := decodeHot(b)
		if err != nil {
			return
		}
		if fr.Call != nil && len(fr.Call.Request) > 0 && !json.Valid(fr.Call.Request) || len(fr.Val) > 0 && !json.Valid(fr.Val) {
			t.Fatalf("accepted invalid JSON: %+v", fr)
		}
		if fr.Job != nil && !json.Valid(fr.Job.Args) || fr.Out != nil && len(fr.Out.Result) > 0 && !json.Valid(fr.Out.Result) {
			t.Fatalf("accepted invalid JSON: %+v", fr)
		}
		// What decodes, encodes again to a frame that decodes the same.
		if again, ok := appendHot(nil, fr); ok {
			if fr2, err := decodeHot(again); err != nil || !reflect.DeepEqual(fr2, fr) {
				t.Fatalf("decoded %+v, which encodes as %q, read back as %+v, %v", fr, again, fr2, err)
			}
		}
	})
}

// sampleRun is the run frame of a small tool with the default bindings.
func sampleRun() *Frame {
	js := "(function (exports, require, module, tgp, console) {\n" + strings.Repeat("  if (n < 2) { return \"fib\" + n; }\n", 20) + "})"
	var b []sandbox.Binding
	for i := 0; i < 8; i++ {
		b = append(b, sandbox.Binding{Name: "read_file", Driver: "fs", Op: "read_file", Params: []string{"path", "content"}})
	}
	job := &sandbox.Job{Entry: sandbox.Module{Path: "tools/math/fib.ts", Hash: strings.Repeat("ab", 32), JS: js}, Args: json.RawMessage(`{"n":10}`), Limits: sandbox.DefaultLimits, Bindings: b}
	return &Frame{T: "run", ID: 7, Job: job, Local: []string{"clock.now", "random.seed"}, Snap: &PinPlan{}}
}

// BenchmarkRunFrame writes a run frame and reads it back (the parent's
// and the worker's cost of starting each run).
func BenchmarkRunFrame(b *testing.B) {
	f := sampleRun()
	var buf bytes.Buffer
	r := bufio.NewReader(&buf)
	for b.Loop() {
		if err := WriteFrame(&buf, f); err != nil {
			b.Fatal(err)
		}
		if _, err := ReadFrame(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHotFrameAllocationIsBounded: a frame whose lists would take far more
// memory than its bytes (empty strings, empty bindings: a compromised
// worker's way to make its parent allocate 16 times what it sends) is
// refused before its lists are allocated; an honest frame of that shape
// is written as JSON instead, and reads back.
func TestHotFrameAllocationIsBounded(t *testing.T) {
	const n = 1 << 20
	logs := append([]byte{hotMark, 'd', 1, 0}, binary.AppendUvarint(nil, n+1)...)
	logs = append(append(logs, make([]byte, n)...), 0, 0, 0)
	bindings := append([]byte{hotMark, 'j', 1, 0, 0, 0, 1, '0', 0, 0, 0, 0}, binary.AppendUvarint(nil, n+1)...)
	bindings = append(bindings, make([]byte, 4*n)...)
	for name, b := range map[string][]byte{"done, a million empty logs": logs, "run, a million empty bindings": bindings} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := decodeHot(b)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "times its bytes in memory") {
			t.Errorf("%s: decoded %v, %v; want it refused for its memory", name, f != nil, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(b)) {
			t.Errorf("%s: refusing a %d-byte frame allocated %d bytes", name, len(b), got)
		}
	}
	honest := &Frame{T: "done", ID: 1, Out: &sandbox.Outcome{Result: json.RawMessage(`1`), Logs: make([]string, 100_000)}}
	if _, ok := appendHot(nil, honest); ok {
		t.Fatal("a done frame of 100,000 empty logs was written in the binary form its decoder refuses")
	}
	if got, jsonForm := roundTrip(t, honest); !jsonForm || !reflect.DeepEqual(got, asJSON(t, honest)) {
		t.Fatalf("100,000 empty logs: JSON form %v, read back %d logs", jsonForm, len(got.Out.Logs))
	}
}

// TestRunFrameEmptyArgsAsJSON: args that are empty but not nil have no
// binary form; json.Marshal refuses them, as it always did.
func TestRunFrameEmptyArgsAsJSON(t *testing.T) {
	f := &Frame{T: "run", ID: 1, Job: &sandbox.Job{Args: json.RawMessage{}}}
	if _, ok := appendHot(nil, f); ok {
		t.Fatal("a run frame with empty args was written in the binary form")
	}
	if err := WriteFrame(new(bytes.Buffer), f); err == nil {
		t.Fatal("a run frame with empty args was written")
	}
}
