package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/leaktest"

	"github.com/agentos-run/agentos/actors/executor"
)

func TestMain(m *testing.M) {
	executor.WorkerMain()
	if os.Getenv("AGENTOS_CLI_CHILD") == "1" { // the test binary as the agentos command
		main()
	}
	if len(os.Args) > 1 && os.Args[1] == demoCrashChild { // the demo re-executing itself
		os.Exit(runDemoCrashChild(context.Background(), os.Args[2:]))
	}
	goleak.VerifyTestMain(m, leaktest.Options...)
}

// cli runs the command in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// waitListening waits, at most timeout, for a node to answer on root's
// socket.
func waitListening(t *testing.T, root string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if c, err := admin.Dial(root); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the node never listened")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// toolRoot makes an initialised tool root with the given files.
func toolRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, stderr := cli(t, "init", dir); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestUsage(t *testing.T) {
	code, stdout, _ := cli(t, "help")
	if code != 0 || !strings.Contains(stdout, "agentos exec") {
		t.Fatalf("help: %d %q", code, stdout)
	}
	code, _, stderr := cli(t, "frobnicate")
	if code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("unknown command: %d %q", code, stderr)
	}
	if code, _, _ := cli(t); code != 2 {
		t.Fatalf("no command: exit %d, want 2", code)
	}
	code, stdout, _ = cli(t, "exec", "--help")
	if code != 0 || !strings.Contains(stdout, "usage: agentos exec") {
		t.Fatalf("exec --help: %d %q", code, stdout)
	}
}
