package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh")
	code, stdout, stderr := cli(t, "init", dir)
	if code != 0 || !strings.Contains(stdout, "created agentos.json") || !strings.Contains(stdout, "created tools/") {
		t.Fatalf("init: %d %q %q", code, stdout, stderr)
	}
	for _, f := range []string{"agentos.json", "meta.json", "tools", ".gitignore"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s missing: %v", f, err)
		}
	}
	code, stdout, _ = cli(t, "init", dir)
	if code != 0 || !strings.Contains(stdout, "nothing to create") {
		t.Fatalf("second init: %d %q", code, stdout)
	}
	if code, _, stderr := cli(t, "init", dir, "other"); code != 2 || !strings.Contains(stderr, "at most one directory") {
		t.Fatalf("two dirs: %d %q", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "agentos.json"), []byte(`{"isolation": "vm"}`), 0o644)
	if code, _, stderr := cli(t, "init", dir); code != 1 || !strings.Contains(stderr, `isolation "vm" is not known`) {
		t.Fatalf("bad config: %d %q", code, stderr)
	}
}
