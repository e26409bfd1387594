package pii

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
)

var testKey = []byte("0123456789abcdef-test-key")

func newT(t testing.TB, opts Options) *Tokenizer {
	t.Helper()
	if opts.Key == nil {
		opts.Key = testKey
	}
	tk, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

var tokenShape = regexp.MustCompile(`^PII_[A-Z][A-Z0-9]*_[0-9a-f]{12}$`)

func TestDetects(t *testing.T) {
	tk := newT(t, Options{Detect: []string{Email, Phone}, Names: []string{"Ada Lovelace", "Ada", "Grace Hopper", "Zoë", "Seán O'Brien"}, Patterns: []Pattern{{Name: "iban", Regexp: `\bFR\d{2}(?: ?\d{4}){5}\b`}}})
	cases := []struct {
		in    string
		found []string // the values replaced, in order
	}{
		{"nothing here, 2024-01-15, id 5551234567", nil},
		{"write to ada@example.com today", []string{"ada@example.com"}},
		{"call +33 1 23 45 67 89 or (555) 123-4567 or 555.123.4567", []string{"+33 1 23 45 67 89", "(555) 123-4567", "555.123.4567"}},
		{"ADA LOVELACE met Grace Hopper; Adalbert did not", []string{"ADA LOVELACE", "Grace Hopper"}},
		{"Ada alone", []string{"Ada"}},
		{"met zoë, Zoëlle and SEÁN O'BRIEN", []string{"zoë", "SEÁN O'BRIEN"}},
		{"Ada_1 and 1Ada are identifiers", nil},
		{"pay FR76 3000 6000 0112 3456 7890 189", []string{"FR76 3000 6000 0112 3456 7890"}},
	}
	for _, c := range cases {
		out, err := tk.String(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.found) == 0 {
			if out != c.in {
				t.Errorf("%q: tokenized to %q, want it unchanged", c.in, out)
			}
			continue
		}
		for _, v := range c.found {
			if strings.Contains(out, v) {
				t.Errorf("%q: %q still holds %q", c.in, out, v)
			}
		}
		back, n, err := tk.RestoreString(out)
		if err != nil || back != c.in || n != len(c.found) {
			t.Errorf("%q: tokenized %q restores to %q (%d tokens, %v)", c.in, out, back, n, err)
		}
	}
}

func TestTokensStableAndKeyed(t *testing.T) {
	a := newT(t, Options{Detect: []string{Email, Phone}})
	b := newT(t, Options{Detect: []string{Email}})
	c := newT(t, Options{Detect: []string{Email}, Key: []byte("another key of 16+ bytes")})
	x, _ := a.String("bob@example.com")
	y, _ := b.String("bob@example.com")
	z, _ := c.String("bob@example.com")
	if x != y || !tokenShape.MatchString(x) {
		t.Fatalf("same key: %q and %q, want one token of the documented shape", x, y)
	}
	if x == z {
		t.Fatalf("another key gave the same token %q", x)
	}
	// A token is not tokenized again (its hex is digits that could look like a phone).
	again, _ := a.String("see " + x + " +1 555 123 4567")
	if !strings.HasPrefix(again, "see "+x+" PII_PHONE_") {
		t.Fatalf("re-tokenizing touched the token: %q", again)
	}
}

func TestJSON(t *testing.T) {
	tk := newT(t, Options{Detect: []string{Email, Phone}, Names: []string{"Ada Lovelace"}})
	in := `{"rows":[{"email":"ada@example.com","n":5551234567,"note":"line\nAda Lovelace \u003cx\u003e","ok":true}],"ada@example.com":1}`
	out, err := tk.JSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	for _, v := range []string{"ada@example.com", "Ada Lovelace"} {
		if strings.Contains(string(out), v) {
			t.Fatalf("%s still holds %q", out, v)
		}
	}
	if !strings.Contains(string(out), `"n":5551234567`) {
		t.Fatalf("a number changed: %s", out)
	}
	back, err := tk.Restore(out)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	_ = json.Unmarshal([]byte(in), &want)
	_ = json.Unmarshal(back, &got)
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) {
		t.Fatalf("round trip:\n got %s\nwant %s", gb, wb)
	}
	same := []byte(`{"a":"nothing","b":[1,2,"x"]}`)
	if o, _ := tk.JSON(same); &o[0] != &same[0] {
		t.Fatal("JSON copied a document it did not change")
	}
}

func TestRestoreRefusesUnknownAndURLEncodes(t *testing.T) {
	tk := newT(t, Options{Detect: []string{Email}, Names: []string{"Ada Lovelace"}})
	other := newT(t, Options{Detect: []string{Email}, Key: []byte("another key of 16+ bytes")})
	forged, _ := other.String("eve@example.com")
	if _, _, err := tk.RestoreString("to " + forged); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("a token of another key: %v, want ErrUnknownToken", err)
	}
	tok, _ := tk.String("Ada Lovelace")
	u, _, err := tk.RestoreString("https://crm.test/find?name=" + strings.ToLower(tok))
	if err != nil || u != "https://crm.test/find?name=Ada%20Lovelace" {
		t.Fatalf("restored URL %q, %v", u, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, o := range []Options{
		{Key: []byte("short")},
		{Detect: []string{"ssn"}},
		{Patterns: []Pattern{{Name: "Bad Name", Regexp: "x"}}},
		{Patterns: []Pattern{{Name: "x", Regexp: "("}}},
		{Patterns: []Pattern{{Name: "x", Regexp: "a*"}}},
		{Patterns: []Pattern{{Name: "email", Regexp: "a"}}},
		{RestoreTo: []string{"fs"}},
		{RestoreTo: []string{"llm"}},
		{RestoreTo: []string{"sql:main"}},
		{RestoreTo: []string{"fetch:crm"}},
		{RestoreTo: []string{"mcp:"}},
	} {
		if o.Key == nil {
			o.Key = testKey
		}
		if _, err := New(o); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", o, err)
		}
	}
}

func TestScopes(t *testing.T) {
	tk := newT(t, Options{RestoreTo: []string{"sql", "fetch:http://127.0.0.1:8080/crm/", "mcp:crm/send", "mcp:mail"}})
	for _, c := range []struct {
		drv, req string
		want     bool
	}{
		{"sql", `{"sql":"select 1"}`, true},
		{"fetch", `{"url":"http://127.0.0.1:8080/crm/x"}`, true},
		{"fetch", `{"url":"http://127.0.0.1:8080/other"}`, false},
		{"fetch", `{"url":"http://127.0.0.1:9090/crm/x"}`, false},
		{"mcp", `{"server":"crm","tool":"send","args":{}}`, true},
		{"mcp", `{"server":"crm","tool":"delete","args":{}}`, false},
		{"mcp", `{"server":"mail","tool":"any"}`, true},
		{"kv", `{}`, false},
	} {
		if got := tk.Restores(c.drv, json.RawMessage(c.req)); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.drv, c.req, got, c.want)
		}
	}
}

// TestDeviceWrap drives a device that echoes its request: an allowed
// driver gets the real value, another gets the token, and both answers
// come back tokenized, errors included.
func TestDeviceWrap(t *testing.T) {
	tk := newT(t, Options{Detect: []string{Email}, RestoreTo: []string{"allowed"}})
	var seen []string
	echo := driver.DeviceFunc(func(_ context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		seen = append(seen, string(req))
		if op == "fail" {
			return nil, driver.Errorf(driver.CodeNotFound, "no user %s", req)
		}
		return req, nil
	})
	tok, _ := tk.String("ada@example.com")
	req := json.RawMessage(`{"to":"` + tok + `"}`)
	for _, name := range []string{"allowed", "other"} {
		out, err := tk.Device(name, echo).Do(context.Background(), "send", req)
		if err != nil || string(out) != string(req) {
			t.Fatalf("%s: answered %s, %v; want the tokenized echo %s", name, out, err, req)
		}
	}
	if seen[0] != `{"to":"ada@example.com"}` || seen[1] != string(req) {
		t.Fatalf("the devices saw %q", seen)
	}
	_, err := tk.Device("allowed", echo).Do(context.Background(), "fail", req)
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != driver.CodeNotFound || strings.Contains(de.Message, "ada@") || !strings.Contains(de.Message, tok) {
		t.Fatalf("error %v: want its code kept and the value tokenized", err)
	}
}

func TestBoltMapSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pii.db")
	m := OpenBoltMap(path)
	tk := newT(t, Options{Detect: []string{Email}, Map: m})
	tok, err := tk.String("ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := OpenBoltMap(path)
	defer m2.Close()
	tk2 := newT(t, Options{Detect: []string{Email}, Map: m2})
	if v, _, err := tk2.RestoreString(tok); err != nil || v != "ada@example.com" {
		t.Fatalf("after reopening: %q, %v", v, err)
	}
	if _, _, err := m.Get(tok); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed map answered %v", err)
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(`{"a":"ada@example.com \n +1 555 123 4567","b":["Ada Lovelace"]}`)
	f.Add(`"x\u0040y.com"`)
	tk := newT(f, Options{Detect: []string{Email, Phone}, Names: []string{"Ada Lovelace"}})
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		out, err := tk.JSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("%s tokenized to invalid JSON %s", doc, out)
		}
		if mayHoldToken([]byte(doc)) {
			return // the input's own token-like text may not restore
		}
		back, err := tk.Restore(out)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		_ = json.Unmarshal([]byte(doc), &want)
		_ = json.Unmarshal(back, &got)
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if string(wb) != string(gb) {
			t.Fatalf("round trip of %s: %s", wb, gb)
		}
	})
}

// A token the map holds for another value (a collision, or a tampered
// map) fails the call; nothing is mixed up. Both maps.
func TestCollisionFailsTheCall(t *testing.T) {
	bolt := OpenBoltMap(filepath.Join(t.TempDir(), "pii.db"))
	defer bolt.Close()
	for name, m := range map[string]Map{"mem": NewMemMap(), "bolt": bolt} {
		tk := newT(t, Options{Detect: []string{Email}, Map: m})
		if err := m.Put(Pair{Token: tk.Token(Email, "ada@example.com"), Value: "eve@example.com"}); err != nil {
			t.Fatal(err)
		}
		if out, err := tk.JSON([]byte(`["ok@example.com","ada@example.com"]`)); !errors.Is(err, ErrCollision) || out != nil {
			t.Errorf("%s: %s, %v; want ErrCollision and no output", name, out, err)
		}
		if _, _, err := tk.RestoreString(tk.Token(Email, "ada@example.com")); !errors.Is(err, ErrUnknownToken) {
			t.Errorf("%s: restoring a token whose value does not hash to it: %v", name, err)
		}
	}
}
