package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/config"
	"github.com/agentos-run/agentos/internal/host"
)

// docs/CONFIG.md documents every key of agentos.json: each key of the
// Config struct tree appears there, written as its full dotted path in
// backquotes, so that the page and the code cannot drift apart; and the
// README's and the page's full examples load as written.
func TestConfigDocCoversEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", config.Doc)) // config.Doc is relative to the module root
	if err != nil {
		t.Fatalf("%s, which every configuration error points to: %v", config.Doc, err)
	}
	doc := string(b)
	keys := config.Keys(reflect.TypeFor[host.Config]())
	if len(keys) < 40 {
		t.Fatalf("only %d keys found: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("%s does not document the key `%s`", config.Doc, k)
		}
	}
	// Every key the page documents exists (no stale entry).
	documented := regexp.MustCompile("(?m)^### `([a-z_.*\\[\\]]+)`").FindAllStringSubmatch(doc, -1)
	for _, m := range documented {
		if !slices.Contains(keys, m[1]) {
			t.Errorf("%s documents `%s`, which is not a key of agentos.json", config.Doc, m[1])
		}
	}
	// The page's full example loads as written.
	ex := regexp.MustCompile("(?s)<!-- full example -->\\s*```json\\n(.*?)```").FindStringSubmatch(doc)
	if ex == nil {
		t.Fatalf("%s has no full example (a ```json block after <!-- full example -->)", config.Doc)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.File), []byte(ex[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := host.LoadConfig(dir); err != nil {
		t.Fatalf("the full example of %s does not load: %v", config.Doc, err)
	}
	for _, top := range keys {
		if strings.ContainsAny(top, ".[") {
			continue
		}
		if !strings.Contains(ex[1], `"`+top+`"`) {
			t.Errorf("the full example of %s leaves out %q", config.Doc, top)
		}
	}
}
