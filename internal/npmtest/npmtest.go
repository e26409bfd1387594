// Package npmtest installs npm packages for tests that drive real
// JavaScript programs: the official MCP TypeScript SDK's client, MCP
// servers published on npm. A test that needs them is skipped, saying what
// to install, where node or npm is missing; under CI=true it fails instead,
// since .ci/run's machine has both.
package npmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ErrNotInstalled: node or npm is not on PATH.
var ErrNotInstalled = errors.New("node and npm are not installed on this machine: install Node.js (Debian's nodejs and npm packages) to run this test")

// Installed reports whether node and npm are on PATH.
func Installed() bool {
	_, e1 := exec.LookPath("node")
	_, e2 := exec.LookPath("npm")
	return e1 == nil && e2 == nil
}

// Node returns the path of node, skipping t (failing it under CI=true)
// where it is missing.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		missing(t)
	}
	return p
}

func missing(t testing.TB) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(ErrNotInstalled)
	}
	t.Skip(ErrNotInstalled.Error())
}

// Install installs pkgs (each "name@version": pin them) and returns the
// folder whose node_modules holds them: run node there, or set NODE_PATH
// to its node_modules. The folder is a temporary one under os.TempDir,
// named by the package list, and reused by later calls and test binaries
// with the same list, so the download happens once per machine; it is
// made in a fresh folder and renamed into place, so concurrent test
// binaries never see half an install. Install skips t where node or npm is
// missing (fails it under CI=true) and fails it when npm fails (the
// registry unreachable, a version that does not exist), quoting npm.
func Install(t testing.TB, pkgs ...string) string {
	t.Helper()
	if !Installed() {
		missing(t)
	}
	dir, err := install(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func install(pkgs []string) (string, error) {
	list := slices.Clone(pkgs)
	slices.Sort(list)
	sum := sha256.Sum256([]byte(strings.Join(list, "\n")))
	dir := filepath.Join(os.TempDir(), "agentos-npmtest-"+hex.EncodeToString(sum[:8]))
	done := filepath.Join(dir, ".installed")
	if _, err := os.Stat(done); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "agentos-npmtest-tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"name":"agentos-npmtest","private":true}`+"\n"), 0o644); err != nil {
		return "", err
	}
	args := append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"}, list...)
	cmd := exec.Command("npm", args...)
	cmd.Dir = tmp
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install %s failed after %s (is the npm registry reachable?): %v\n%s", strings.Join(list, " "), time.Since(start).Round(time.Millisecond), err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), []byte(strings.Join(list, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary installed the same list meanwhile: use its.
		if _, serr := os.Stat(done); serr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("npmtest: moving the install into %s: %w", dir, err)
	}
	return dir, nil
}
