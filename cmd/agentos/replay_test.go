package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/journal"
)

func TestReplay(t *testing.T) {
	root, id := recorded(t)
	os.WriteFile(filepath.Join(root, "orders.csv"), []byte("id,amount\n1,1000\n"), 0o644) // replay must not read it
	code, stdout, _ := cli(t, "replay", "--root", root, id)
	if code != 0 || !strings.Contains(stdout, "replayed  102") || !strings.Contains(stdout, "same result as recorded") {
		t.Fatalf("replay: %d %q", code, stdout)
	}
	fixed := filepath.Join(t.TempDir(), "fixed.ts")
	os.WriteFile(fixed, []byte(strings.Replace(totalTool, "a + b + 1", "a + b", 1)), 0o644)
	code, stdout, _ = cli(t, "replay", "--root", root, "--tool", fixed, id)
	if code != 0 || !strings.Contains(stdout, "replayed  100") || !strings.Contains(stdout, "followed the recorded I/O exactly") {
		t.Fatalf("patched replay: %d %q", code, stdout)
	}
	diverging := filepath.Join(t.TempDir(), "div.ts")
	os.WriteFile(diverging, []byte(strings.Replace(totalTool, "args.file", "'other.csv'", 1)), 0o644)
	code, stdout, _ = cli(t, "replay", "--root", root, id, "--tool", diverging, "--json")
	if code != 1 || !strings.Contains(stdout, `"code": "AGENTOS-J001"`) || !strings.Contains(stdout, `"seq": 1`) {
		t.Fatalf("diverging replay: %d %q", code, stdout)
	}
	if code, _, stderr := cli(t, "replay", "--root", root, "--tool", "/nope.ts", id); code != 2 || !strings.Contains(stderr, "cannot read the patched tool") {
		t.Fatalf("missing patch: %d %q", code, stderr)
	}
}

// TestTraceAndReplayOnlyRead: trace and replay open the journal read-only,
// beside another reader (a second terminal's replay of the same journal):
// an open for writing waited for the other's lock and failed with
// ErrLocked, and first rebuilt bbolt's free-page list over the whole file.
func TestTraceAndReplayOnlyRead(t *testing.T) {
	root, id := recorded(t)
	other, err := journal.Open(filepath.Join(root, ".agentos", "journal.db"), journal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if code, stdout, stderr := cli(t, "trace", "--root", root, id); code != 0 || !strings.Contains(stdout, id) {
		t.Fatalf("trace beside a reader: %d %q %q", code, stdout, stderr)
	}
	if code, stdout, stderr := cli(t, "replay", "--root", root, id); code != 0 || !strings.Contains(stdout, "same result as recorded") {
		t.Fatalf("replay beside a reader: %d %q %q", code, stdout, stderr)
	}
}
