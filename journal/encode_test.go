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
