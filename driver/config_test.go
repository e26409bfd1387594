package driver

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/config"
)

// The fetch section's allow-list is refused unless each prefix is an
// http(s) URL in canonical form, and it becomes the device's.
func TestFetchConfig(t *testing.T) {
	for _, tc := range []struct{ allow, want string }{
		{"api.example.com", `fetch.allow "api.example.com" must be an http(s) URL prefix with a host`},
		{"https://h/v1/../admin/", `fetch.allow "https://h/v1/../admin/" is ambiguous: write it as "https://h/admin/"`},
	} {
		if err := (FetchConfig{Allow: []string{tc.allow}}).Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.allow, err, tc.want)
		}
	}
	c := FetchConfig{Allow: []string{"https://api.example.com/v1/"}, Timeout: config.Duration(time.Second), MaxBytes: 7}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := c.Device(map[string]Secret{"s": {Env: "S"}})
	if d.Allow[0] != "https://api.example.com/v1/" || d.Timeout != time.Second || d.MaxBytes != 7 || d.Secrets["s"].Env != "S" {
		t.Fatalf("device %+v", d)
	}
}

// Each mistake in a secret is refused naming secrets.<name>.<key>, in
// name order; Bind reads the values from the environment.
func TestSecretsValidate(t *testing.T) {
	ok := SecretConfig{Env: "TOKEN", Header: "Authorization", Format: "Bearer {}", Allow: []string{"https://api.example.com/"}}
	with := func(f func(*SecretConfig)) Secrets {
		s := ok
		f(&s)
		return Secrets{"gh": s}
	}
	for _, tc := range []struct {
		s    Secrets
		want string
	}{
		{Secrets{"a b": ok}, `secrets: the name "a b" must be 1 to 64 letters`},
		{with(func(s *SecretConfig) { s.Env = "" }), `secrets.gh.env is required`},
		{with(func(s *SecretConfig) { s.Env = "1X" }), `secrets.gh.env "1X" is not an environment variable name`},
		{with(func(s *SecretConfig) { s.Query = "key" }), `secrets.gh: set exactly one of header`},
		{with(func(s *SecretConfig) { s.Header = "Bad Header" }), `secrets.gh.header "Bad Header" is not an HTTP header name`},
		{with(func(s *SecretConfig) { s.Format = "Bearer" }), `secrets.gh.format "Bearer" must contain {}`},
		{with(func(s *SecretConfig) { s.Format = "{}\r\nX: y" }), `secrets.gh.format must be one line`},
		{with(func(s *SecretConfig) { s.Allow = nil }), `secrets.gh.allow is required`},
		{with(func(s *SecretConfig) { s.Allow = []string{"http://api.example.com/"} }), `secrets.gh.allow "http://api.example.com/": a secret goes only over https`},
		{Secrets{"b": {}, "a": with(func(s *SecretConfig) { s.Env = "" })["gh"]}, `secrets.a.env is required`},
	} {
		if err := tc.s.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	loop := with(func(s *SecretConfig) { s.Allow = []string{"http://127.0.0.1:8080/"} })
	if err := loop.Validate(); err != nil {
		t.Errorf("plain http to a loopback host: %v", err)
	}
	b := loop.Bind(func(n string) string { return map[string]string{"TOKEN": "v"}[n] })
	if s := b["gh"]; s.Value != "v" || s.Env != "TOKEN" || s.Header != "Authorization" || s.Format != "Bearer {}" {
		t.Fatalf("bound %+v", b)
	}
	if Secrets(nil).Bind(nil) != nil {
		t.Fatal("no secrets bind to nil")
	}
}

// The sql section's file stays inside the tool root and defaults to the
// state directory's data.db.
func TestSQLConfig(t *testing.T) {
	if err := (SQLConfig{SQLite: "../x.db"}).Validate(); err == nil || !strings.HasPrefix(err.Error(), `sql.sqlite "../x.db" must be a file inside the tool root`) {
		t.Errorf("a file outside the root: %v", err)
	}
	root := t.TempDir()
	if p := (SQLConfig{}).SQLitePath(root); p != filepath.Join(root, ".agentos", "data.db") {
		t.Errorf("default path %s", p)
	}
	if p := (SQLConfig{SQLite: "db/t.db"}).SQLitePath(root); p != filepath.Join(root, "db", "t.db") {
		t.Errorf("path %s", p)
	}
	o := (SQLConfig{PostgresDSNEnv: "DSN", Role: "tools"}).DatabaseOptions(root, nil)
	if o.PostgresDSNEnv != "DSN" || o.Role != "tools" || o.SQLite != filepath.Join(root, ".agentos", "data.db") {
		t.Errorf("database options %+v", o)
	}
	if s := (SQLConfig{MaxRows: 5, Role: "r"}).Session(nil); s.MaxRows != 5 || s.Role != "r" {
		t.Errorf("session %+v", s)
	}
}
