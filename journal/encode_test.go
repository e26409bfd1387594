package journal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
)

// TestEntryEncoding: the hand-written encoding is valid JSON that decodes
// to the same Entry.
func TestEntryEncoding(t *testing.T) {
	at := time.Date(2026, 11, 22, 21, 0, 0, 123456789, time.UTC)
	for _, e := range []Entry{
		{Seq: 1, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{"path":"a.txt"}`), Response: json.RawMessage(`"x\ny"`), At: at, Duration: 1234},
		{Seq: 2, Driver: "we\"ird\\", Op: "o\tp\u2028\x01é", Error: &driver.Error{Code: "io", Message: "bad \"thing\"\n<&>\xff"}, At: at, Cost: 0.25},
		{Seq: 1 << 40, Driver: "clock", Op: "now", Response: json.RawMessage(`1780000000000`), At: at},
	} {
		b := e.appendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON: %s", b)
		}
		var got Entry
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		want := e
		if want.Error != nil {
			want.Error = &driver.Error{Code: want.Error.Code, Message: "bad \"thing\"\n<&>\ufffd"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v\n(%s)", got, want, b)
		}
	}
}

// TestEntryDecoding: the direct scan of a stored entry (decodeStored)
// decodes exactly what encoding/json does, for every shape encodeEntry
// writes and for inputs it did not write (which encoding/json decodes).
func TestEntryDecoding(t *testing.T) {
	at := time.Date(2026, 11, 22, 21, 0, 0, 123456789, time.UTC)
	entries := []Entry{
		{Seq: 1, Driver: "fs", Op: "read_file", Request: json.RawMessage(`{"path":"a.txt"}`), Response: json.RawMessage(`"x\ny"`), At: at, Duration: 1234},
		{Seq: 2, Driver: "we\"ird\\", Op: "o\tp\u2028\x01é", Error: &driver.Error{Code: "io", Message: "bad \"thing\"\n<&>\xff"}, At: at, Cost: 0.25},
		{Seq: 1 << 40, Driver: "clock", Op: "now", Response: json.RawMessage(`1780000000000`), At: at},
		{Seq: 3, Driver: "fetch", Op: "get", Request: json.RawMessage(`{"a":[1,{"b":"}],\""}],"c":null}`), Response: json.RawMessage(`[true,false,"\\",{}]`), At: at.Add(-time.Hour), Duration: -5, Cost: 1e-9, Sealed: "sha256:ab"},
		{Seq: 4, Driver: "llm", Op: "chat", Error: &driver.Error{Code: "quota", Message: "é ok"}, At: at},
	}
	j := &Journal{opts: Options{BlobThreshold: 8, ChunkDrivers: []string{"fetch", "llm"}}}
	ck := &chunker{}
	var stored [][]byte
	for _, e := range entries {
		stored = append(stored, e.appendJSON(nil))
		b, _ := j.encodeEntry(&e, ck) // with blob and chunk references
		stored = append(stored, b)
	}
	stored = append(stored,
		[]byte(`{"driver":"fs","seq":9,"op":"x","at":"2026-11-22T21:00:00Z","duration_ns":1}`), // another order
		[]byte(` {"seq":9,"driver":"fs","op":"x","at":"2026-11-22T21:00:00Z","duration_ns":1}`),
		[]byte(`{"seq":9,"driver":"f\u0073","op":"x","request": {"a":1} ,"at":"2026-11-22T21:00:00Z","duration_ns":1}`),
		[]byte(`{"seq":9,"driver":"fs","op":"x","at":"2026-11-22T21:00:00+02:00","duration_ns":1,"extra":2}`),
	)
	for _, v := range stored {
		var want storedEntry
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeStored(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if !reflect.DeepEqual(got, want) || !got.At.Equal(want.At) {
			t.Fatalf("decoding %s:\n got %+v\nwant %+v", v, got, want)
		}
	}
	if _, ok := scanStored(stored[0]); !ok {
		t.Fatal("the direct scan refused an entry appendJSON wrote")
	}
	for _, bad := range []string{`{"seq":1,"driver":"fs","op":"x","request":{"a":,"at":"2026-11-22T21:00:00Z","duration_ns":1}`, `{"seq":1`, `{"seq":1,"driver":"fs"`} {
		if _, ok := scanStored([]byte(bad)); ok {
			t.Fatalf("the direct scan accepted %s", bad)
		}
		if _, err := decodeStored([]byte(bad)); err == nil {
			t.Fatalf("%s decoded without an error", bad)
		}
	}
}
