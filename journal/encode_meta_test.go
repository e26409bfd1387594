package journal

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
)

// marshal is the reference RunMeta.appendJSON is held to: encoding/json
// without HTML escaping, as the journal wrote a run's metadata before.
func marshal(v any) ([]byte, error) { return driver.Marshal(v) }

// metaStrings are strings encoding/json escapes in every way it does:
// quotes, controls, HTML (not escaped: marshal turns that off), U+2028 and
// invalid UTF-8.
var metaStrings = []string{"", "tools/x.ts", "we\"ird\\", "o\tp\u2028\u2029\x01é", "<&>", "bad\xff\xfe", "日本", "\x7f\r\n"}

// metaRaws are arguments, results and errors as a run may hold them, some
// not compact (encoding/json compacts them).
var metaRaws = []json.RawMessage{nil, {}, json.RawMessage(`{"a":1}`), json.RawMessage(" {\"a\" : [1, 2,\n\"<&>\"]} "), json.RawMessage(`"\u2028"`), json.RawMessage(`null`), json.RawMessage(`1e-9`)}

// randomMeta fills every field of a RunMeta (found by reflection, so a field
// added to RunMeta is filled too) with a value drawn from r: zero values
// often, to exercise omitempty and omitzero.
func randomMeta(r *rand.Rand) RunMeta {
	var m RunMeta
	fill(r, reflect.ValueOf(&m).Elem())
	return m
}

func fill(r *rand.Rand, v reflect.Value) {
	if r.IntN(3) == 0 && v.Kind() != reflect.Struct {
		return // the zero value
	}
	switch v.Interface().(type) {
	case time.Time:
		locs := []*time.Location{time.UTC, time.FixedZone("", 2*3600+30*60), time.FixedZone("X", -7*3600)}
		v.Set(reflect.ValueOf(time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(locs[r.IntN(len(locs))])))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(metaRaws[r.IntN(len(metaRaws))]))
		return
	case []capability.Grant:
		if r.IntN(4) == 0 {
			v.Set(reflect.ValueOf([]capability.Grant{}))
			return
		}
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(metaStrings[r.IntN(len(metaStrings))])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem())
	case reflect.Slice:
		n := r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i))
		}
		v.Set(s)
	default:
		panic("randomMeta cannot fill a " + v.Type().String() + ": teach it, and RunMeta.appendJSON, the new field")
	}
}

// TestMetaJSONIsEncodingJSONs: the hand-written encoding of a run's
// metadata is, byte for byte, what encoding/json (marshal) writes, for
// every field set or not, and fails where it fails.
func TestMetaJSONIsEncodingJSONs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		m := randomMeta(r)
		want, wantErr := marshal(m)
		got, err := m.appendJSON(nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("meta #%d: appendJSON error %v, encoding/json's %v", i, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("meta #%d:\n got %s\nwant %s", i, got, want)
		}
	}
	for _, m := range []RunMeta{
		{Args: json.RawMessage(`{"a":`)},
		{Result: json.RawMessage(`nope`)},
		{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Host: Host{Since: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		if _, err := m.appendJSON(nil); err == nil {
			t.Fatalf("%+v: encoded; encoding/json refuses it", m)
		}
		if _, err := marshal(m); err == nil {
			t.Fatalf("%+v: encoding/json encoded it", m)
		}
	}
}

// FuzzMetaJSON holds the encoders to the same bytes for any strings and
// raw JSON a run may carry.
func FuzzMetaJSON(f *testing.F) {
	f.Add("tools/x.ts", "o\tp\u2028\xff", []byte(` {"a" : 1} `), int64(5))
	f.Fuzz(func(t *testing.T, s1, s2 string, raw []byte, n int64) {
		m := RunMeta{ID: s1, Kind: s2, Tool: s2, Args: raw, Result: raw, Reason: s1, Logs: []string{s1, s2},
			Caller: &Caller{Process: s2, Grants: []capability.Grant{{Right: capability.Right(s1), Scope: s2}}},
			Limits: &Limits{MemoryBytes: n}, Calls: int(n), Started: time.Unix(n%4e9, n%1e9), Host: Host{Boot: s1}}
		want, wantErr := marshal(m)
		got, err := m.appendJSON(nil)
		if (err != nil) != (wantErr != nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v)\nwant %s (%v)", got, err, want, wantErr)
		}
	})
}
