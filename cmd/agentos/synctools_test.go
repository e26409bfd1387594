package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
)

// TestSharedToolsVisibleToExecAndCheck is issue 11 item 8: after 'init
// --upstream URL' of a non-empty upstream, exec and check said "no file":
// only call and serve hydrated. Every command that reads tools sees the
// upstream's, hydrating when the tool root is behind; with the upstream
// unreachable they work on the local copy with a warning.
func TestSharedToolsVisibleToExecAndCheck(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "a")
	if code, _, stderr := cli(t, "init", a); code != 0 {
		t.Fatalf("init a: %s", stderr)
	}
	up := a + ".git"
	write := func(path, content string) {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"path": path, "content": content})
		if code, out, stderr := cli(t, "call", "--root", a, "write_file", string(args)); code != 0 {
			t.Fatalf("write_file %s: %d %s %s", path, code, out, stderr)
		}
	}
	write(samples.FibPath, samples.FibTool)

	b := filepath.Join(base, "b")
	if code, _, stderr := cli(t, "init", "--upstream", up, b); code != 0 {
		t.Fatalf("init b: %s", stderr)
	}
	code, stdout, stderr := cli(t, "exec", "--root", b, "--inprocess", "--no-journal", samples.FibPath, `{"n": 10}`)
	if code != 0 || strings.TrimSpace(stdout) != "55" {
		t.Fatalf("exec of a shared tool after init --upstream: %d %q %q", code, stdout, stderr)
	}
	if code, stdout, stderr := cli(t, "check", "--root", b, samples.FibPath); code != 0 || !strings.Contains(stdout, "valid") {
		t.Fatalf("check of a shared tool: %d %q %q", code, stdout, stderr)
	}

	// The upstream moves on: the next reader hydrates.
	write("tools/math/fib2.ts", samples.FibTool)
	if code, stdout, stderr := cli(t, "check", "--root", b, "tools/math/fib2.ts"); code != 0 {
		t.Fatalf("check of a tool pushed since: %d %q %q", code, stdout, stderr)
	}
	// Current: no hydration.
	cfg, err := host.LoadConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if hydrated, err := host.SyncTools(context.Background(), cfg, b, nil); err != nil || hydrated {
		t.Fatalf("a current tool root was hydrated again: %v %v", hydrated, err)
	}

	// Offline: the local copy, with a warning.
	write("tools/math/fib3.ts", samples.FibTool)
	if err := os.Rename(up, up+".away"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, "exec", "--root", b, "--inprocess", "--no-journal", samples.FibPath, `{"n": 10}`)
	if code != 0 || strings.TrimSpace(stdout) != "55" || !strings.Contains(stderr, "warning: the tools could not be brought up to date") || !strings.Contains(stderr, "using the local copy") {
		t.Fatalf("exec with the upstream unreachable: %d %q %q", code, stdout, stderr)
	}
}
