package main

import (
	"strings"
	"testing"
)

// The crash itself is tested in the root package (TestCrashAndRecover); here
// the command's output and exit status.
func TestRecover(t *testing.T) {
	root, _ := recorded(t)
	code, stdout, _ := cli(t, "recover", "--root", root)
	if code != 0 || !strings.Contains(stdout, "no unfinished runs") {
		t.Fatalf("recover: %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "recover", "--root", root, "--json")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Fatalf("recover --json: %d %q", code, stdout)
	}
	if code, _, _ := cli(t, "recover", "--root", root, "extra"); code != 2 {
		t.Fatal("recover with an argument must be a usage error")
	}
}
