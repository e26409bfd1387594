package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agentos-run/agentos/config"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/scaffold"
)

// FuzzDecodeConfig feeds the positional decoder of agentos.json arbitrary
// bytes. It MUST never panic; every refusal MUST be a *ConfigError (the
// key, its line and column, what was expected); and a file it accepts
// MUST load again, unchanged, once written back (the decoder and the
// Config types agree on every key). The seeds are the page's full example,
// the file agentos init writes and a few broken files.
//
//	go test ./config -run '^$' -fuzz FuzzDecodeConfig -fuzztime 30s
func FuzzDecodeConfig(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", config.Doc)); err == nil {
		if m := regexp.MustCompile("(?s)<!-- full example -->\\s*```json\\n(.*?)```").FindSubmatch(b); m != nil {
			f.Add(m[1])
		}
	}
	dir := f.TempDir()
	if _, err := scaffold.Init(dir, scaffold.Options{ToolsDir: scaffold.DefaultTools, NoGit: true}); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, config.File)); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `{"isolation": "inprocess", "timeout": "5s"}`, `{"timeout": 5}`, `{"limits": {"max_args_bytes": "x"}}`,
		`{"llm": {"model": "m", "base_url": "http://127.0.0.1:1/v1"`, `{"agentz": {}}`, `[1, 2]`, `{"quota": {"tool_calls": -1}}`,
		`{"cluster": {"enabled": true, "seeds": ["127.0.0.1:1"]}}`, "{\"memory\":\n  {\"window_tokens\": 1e99}}",
		`{"cluster": {"seeds": []}}`, `{"cluster": {"etcd": {"endpoints": []}}}`, // found by CI: an empty list is no key

	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c host.Config
		err := config.Decode(config.File, b, &c)
		if err != nil {
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("a refusal that is no *ConfigError: %T %v", err, err)
			}
			return
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("an accepted file does not write back: %v", err)
		}
		var d host.Config
		if err := config.Decode(config.File, again, &d); err != nil {
			t.Fatalf("an accepted file, written back, no longer loads: %v\n%s", err, again)
		}
		if a, b := mustJSON(t, c), mustJSON(t, d); a != b {
			t.Fatalf("an accepted file changed when written back:\n%s\n%s", a, b)
		}
	})
}

func mustJSON(t *testing.T, c host.Config) string {
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
