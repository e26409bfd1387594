package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
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
	cfg, err := host.LoadConfig(dir)
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
	if cfg, _ := host.LoadConfig(plain); cfg.Git.Upstream != "" {
		t.Fatalf("--no-git wrote an upstream: %+v", cfg.Git)
	}
	if _, err := os.Stat(plain + ".git"); err == nil {
		t.Fatal("--no-git created a repository")
	}
	if code, _, _ := cli(t, "init", "--no-git", "--upstream", "x", t.TempDir()); code != 2 {
		t.Fatalf("--no-git with --upstream: exit %d, want 2", code)
	}
}

// TestInitUpstreamPath: 'init --upstream PATH' (or file://PATH) where PATH
// does not exist creates the bare repository there, with the branch
// agentos pushes; a relative PATH is taken from the current directory and
// written into agentos.json relative to the root; a PATH that exists but
// is not a Git repository is refused before anything is created.
func TestInitUpstreamPath(t *testing.T) {
	base := t.TempDir()
	up := filepath.Join(base, "shared", "team.git")
	root := filepath.Join(base, "root")
	code, stdout, stderr := cli(t, "init", "--upstream", up, root)
	if code != 0 || !strings.Contains(stdout, up+" (bare Git upstream)") {
		t.Fatalf("init --upstream MISSING: %d %q %q", code, stdout, stderr)
	}
	head, err := os.ReadFile(filepath.Join(up, "HEAD"))
	if err != nil || strings.TrimSpace(string(head)) != "ref: refs/heads/main" {
		t.Fatalf("the created upstream's HEAD = %q, %v; want the branch main agentos pushes", head, err)
	}
	if cfg, err := host.LoadConfig(root); err != nil || cfg.Git.Upstream != up {
		t.Fatalf("config git = %+v %v", cfg.Git, err)
	}
	// A second root on the same upstream: nothing more to create there.
	code, stdout, stderr = cli(t, "init", "--upstream", "file://"+up, filepath.Join(base, "root2"))
	if code != 0 || strings.Contains(stdout, "bare Git upstream") {
		t.Fatalf("init --upstream EXISTING: %d %q %q", code, stdout, stderr)
	}
	// Both roots share tools through it.
	if code, _, stderr := cli(t, "call", "--root", root, "write_file", `{"path":"tools/x.ts","content":"export default function main() { return 1 }"}`); code != 0 {
		t.Fatalf("write_file in the first root: %d %s", code, stderr)
	}
	if code, out, stderr := cli(t, "exec", "--root", filepath.Join(base, "root2"), "--inprocess", "tools/x.ts"); code != 0 || !strings.Contains(out, "1") {
		t.Fatalf("the second root runs the first root's tool through the created upstream: %d %q %q", code, out, stderr)
	}

	t.Chdir(base)
	code, stdout, stderr = cli(t, "init", "--upstream", "rel.git", "sub")
	if code != 0 || !strings.Contains(stdout, filepath.Join(base, "rel.git")+" (bare Git upstream)") {
		t.Fatalf("init --upstream RELATIVE: %d %q %q", code, stdout, stderr)
	}
	if cfg, err := host.LoadConfig(filepath.Join(base, "sub")); err != nil || cfg.Git.Upstream != "../rel.git" {
		t.Fatalf("a relative upstream in agentos.json = %+v %v, want ../rel.git (relative to the root)", cfg.Git, err)
	}

	notGit := filepath.Join(base, "notgit")
	os.MkdirAll(notGit, 0o755)
	os.WriteFile(filepath.Join(notGit, "README"), []byte("x"), 0o644)
	bad := filepath.Join(base, "bad")
	code, _, stderr = cli(t, "init", "--upstream", notGit, bad)
	if code == 0 || !strings.Contains(stderr, "not a Git repository") {
		t.Fatalf("init --upstream NOT-GIT: %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(bad, "agentos.json")); err == nil {
		t.Fatal("a refused init wrote agentos.json")
	}
}

// Issue 25, item 12: the upstream init names has, as its default branch
// (its HEAD), the branch agentos pushes, so that a plain 'git clone' of it
// after a push checks the tools out. An existing empty bare repository made
// by a git whose default branch is master had HEAD on master: the clone
// warned "remote HEAD refers to nonexistent ref" and checked out nothing.
func TestInitUpstreamClonesToWhatAgentosPushed(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs the git command (apt-get install git) to clone the upstream as a user would")
	}
	gitRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		name     string
		existing bool // the upstream is an empty bare repository whose HEAD is master
	}{{"made", false}, {"master", true}} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			up, root := filepath.Join(base, "team.git"), filepath.Join(base, "root")
			if tc.existing {
				gitRun("-c", "init.defaultBranch=master", "init", "--bare", "-q", up)
			}
			if code, stdout, stderr := cli(t, "init", "--upstream", up, root); code != 0 {
				t.Fatalf("init: %d %q %q", code, stdout, stderr)
			}
			if code, _, stderr := cli(t, "call", "--root", root, "write_file", `{"path":"tools/x.ts","content":"export default function main() { return 1 }"}`); code != 0 {
				t.Fatalf("write_file: %d %s", code, stderr)
			}
			clone := filepath.Join(base, "clone")
			out := gitRun("clone", up, clone)
			if strings.Contains(out, "nonexistent ref") {
				t.Fatalf("git clone of the upstream: %s", out)
			}
			if b, err := os.ReadFile(filepath.Join(clone, "tools", "x.ts")); err != nil || !strings.Contains(string(b), "return 1") {
				t.Fatalf("the clone does not hold the pushed tool: %q %v (git clone said %q)", b, err, out)
			}
			if branch := strings.TrimSpace(gitRun("-C", clone, "rev-parse", "--abbrev-ref", "HEAD")); branch != "main" {
				t.Fatalf("the clone is on %q, want main (the branch agentos pushes)", branch)
			}
		})
	}
}
