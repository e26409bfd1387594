package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// 'agentos memory' on a root no node serves: reading creates nothing,
// remember creates the file (0600), recall ranks, forget deletes, mistakes
// are usage errors that say what to write.
func TestMemoryCommandWithoutNode(t *testing.T) {
	root := quotaRoot(t, `{}`)
	if code, out, stderr := cli(t, "memory", "--root", root); code != 0 || !strings.Contains(out, "no agent has a memory yet") {
		t.Fatalf("an empty memory: %d %q %q", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, ".agentos", "memory.db")); !os.IsNotExist(err) {
		t.Fatalf("reading created the memory file: %v", err)
	}
	if code, out, stderr := cli(t, "memory", "--root", root, "remember", "--kind", "preference", "--tag", "acme", "alice", "ACME", "ships", "by", "Colissimo"); code != 0 || !strings.Contains(out, "remembered alice's preference 1") {
		t.Fatalf("remember: %d %q %q", code, out, stderr)
	}
	if fi, err := os.Stat(filepath.Join(root, ".agentos", "memory.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the memory file: %v %v", fi, err)
	}
	cli(t, "memory", "--root", root, "remember", "alice", "The staging database is stg-eu-1")
	code, out, stderr := cli(t, "memory", "--root", root, "--json", "recall", "alice", "how", "does", "ACME", "ship")
	var got struct {
		Hits []struct {
			ID, Kind, Text string
			Score          float64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Hits) != 1 || got.Hits[0].ID != "1" || got.Hits[0].Kind != "preference" {
		t.Fatalf("recall --json: %d %q %q", code, out, stderr)
	}
	if code, out, _ := cli(t, "memory", "--root", root, "list", "alice"); code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, "stg-eu-1") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _, stderr := cli(t, "memory", "--root", root, "forget", "alice", "2"); code != 0 {
		t.Fatalf("forget: %s", stderr)
	}
	if code, _, stderr := cli(t, "memory", "--root", root, "show", "alice", "2"); code != 1 || !strings.Contains(stderr, `agent "alice" has no item "2"`) {
		t.Fatalf("show of a forgotten item: %d %q", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, "unknown memory action"},
		{[]string{"recall", "alice"}, "needs AGENT QUERY"},
		{[]string{"list", "--kind", "rumour", "alice"}, "use fact, lesson, preference or page"},
	} {
		code, _, stderr := cli(t, append([]string{"memory", "--root", root}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("memory %v: %d %q, want usage saying %q", c.args, code, stderr, c.want)
		}
	}
}

// While a node serves the root it holds the memory file: 'agentos memory'
// goes through its socket, and sees what its agents remember.
func TestMemoryCommandThroughNode(t *testing.T) {
	root := quotaRoot(t, `{"isolation": "inprocess"}`)
	cmd, out := startServe(t, root, t.TempDir(), fmt.Sprint(time.Now().UnixNano()))
	if code, o, stderr := cli(t, "call", "--root", root, "remember", `{"text":"the default process keeps this","tags":["cli"]}`); code != 0 {
		t.Fatalf("call remember: %d %q %q", code, o, stderr)
	}
	code, o, stderr := cli(t, "memory", "--root", root, "recall", "agent", "keeps")
	if code != 0 || !strings.Contains(o, "the default process keeps this") {
		t.Fatalf("recall through the node: %d %q %q", code, o, stderr)
	}
	if code, o, stderr := cli(t, "memory", "--root", root, "remember", "bob", "Bob drinks tea"); code != 0 || !strings.Contains(o, "remembered bob's fact 1") {
		t.Fatalf("remember through the node: %d %q %q", code, o, stderr)
	}
	// The default process has no memory_read right: bob's memory is not its.
	if code, _, stderr := cli(t, "call", "--root", root, "recall", `{"query":"tea","agent":"bob"}`); code == 0 || !strings.Contains(stderr, `lacks the "memory_read" right on "bob"`) {
		t.Fatalf("reading another agent's memory without the right: %d %q", code, stderr)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	// Stopped, the file is the CLI's: the same memory.
	if code, o, _ := cli(t, "memory", "--root", root); code != 0 || !strings.Contains(o, "agent") || !strings.Contains(o, "bob") {
		t.Fatalf("after the node stopped: %d %q\n%s", code, o, out.String())
	}
}
