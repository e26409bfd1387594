package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos"
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

func TestInitGitUpstream(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tools-root")
	code, stdout, stderr := cli(t, "init", dir)
	if code != 0 || !strings.Contains(stdout, dir+".git (bare Git upstream)") {
		t.Fatalf("init: %d %s %s", code, stdout, stderr)
	}
	cfg, err := agentos.LoadConfig(dir)
	if err != nil || cfg.Git.Upstream != "../tools-root.git" {
		t.Fatalf("config git = %+v %v", cfg.Git, err)
	}
	if _, err := os.Stat(filepath.Join(dir+".git", "HEAD")); err != nil {
		t.Fatalf("no bare repository beside the root: %v", err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if code, _, stderr := cli(t, "init", "--no-git", plain); code != 0 {
		t.Fatal(stderr)
	}
	if cfg, _ := agentos.LoadConfig(plain); cfg.Git.Upstream != "" {
		t.Fatalf("--no-git wrote an upstream: %+v", cfg.Git)
	}
	if _, err := os.Stat(plain + ".git"); err == nil {
		t.Fatal("--no-git created a repository")
	}
	if code, _, _ := cli(t, "init", "--no-git", "--upstream", "x", t.TempDir()); code != 2 {
		t.Fatalf("--no-git with --upstream: exit %d, want 2", code)
	}
}
