package agentos

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
)

func TestInitIsIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	created, err := Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tools/", ConfigFile, RegistryFile, ".gitignore"}; !reflect.DeepEqual(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"tools":{"x":{}}}`), 0o644)
	again, err := Init(dir)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Init created %v, %v", again, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, RegistryFile)); string(b) != `{"tools":{"x":{}}}` {
		t.Fatal("Init overwrote an existing file")
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := cfg.ExecutorOptions(dir)
	if opts.Isolation != executor.IsolationProcess || opts.Limits.Timeout != 5*time.Second || opts.Limits.MemoryBytes != 256<<20 || opts.ToolsDir != "tools" {
		t.Fatalf("the scaffolded config does not spell out the defaults: %+v", opts)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"isolaton": "process"}`, `unknown field "isolaton"`},
		{`{"isolation": "vm"}`, `isolation "vm" is not known`},
		{`{"limits": {"timeout": 5}}`, `a duration must be a string`},
		{`{"limits": {"timeout": "5 secs"}}`, `bad duration "5 secs"`},
		{`{"write_dirs": ["../up"]}`, `must be a directory inside the tool root`},
		{`{`, `unexpected EOF`},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.body), 0o644)
		_, err := LoadConfig(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ConfigFile) {
			t.Errorf("%s: got %v, want an error naming the file and containing %q", tc.body, err, tc.want)
		}
	}
	if _, err := LoadConfig(t.TempDir()); err != nil {
		t.Fatalf("a missing config must mean defaults, got %v", err)
	}
}
