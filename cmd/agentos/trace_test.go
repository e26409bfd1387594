package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTrace(t *testing.T) {
	root, id := recorded(t)
	code, stdout, _ := cli(t, "trace", "--root", root, id[:12])
	if code != 0 || !strings.Contains(stdout, "#1") || !strings.Contains(stdout, `fs.read_file`) || !strings.Contains(stdout, `{"path":"orders.csv"}`) || !strings.Contains(stdout, "result 102") {
		t.Fatalf("trace: %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "trace", "--root", root, "--json", id)
	var d struct {
		Run     struct{ ID string }
		Source  string
		Entries []struct{ Seq uint64 }
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != 0 || d.Run.ID != id || d.Source != totalTool || len(d.Entries) != 1 {
		t.Fatalf("trace --json: %d %v %q", code, err, stdout)
	}
	if code, _, stderr := cli(t, "trace", "--root", root, "nope"); code != 2 || !strings.Contains(stderr, `no such run in the journal: "nope"`) {
		t.Fatalf("unknown run: %d %q", code, stderr)
	}
}
