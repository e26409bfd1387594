package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/node/admin"
)

func TestCallWithoutNode(t *testing.T) {
	root := toolRoot(t, nil)
	content, _ := json.Marshal(samples.FibTool)
	code, stdout, stderr := cli(t, "call", "--root", root, "write_file", `{"path":"tools/math/fib.ts","content":`+string(content)+`}`)
	if code != 0 || !strings.Contains(stdout, `"created": true`) {
		t.Fatalf("write_file: %d %s %s", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "call", "--root", root, "--json", "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":10}}`)
	var res struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
		RunID   string          `json:"run_id"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || string(res.Result) != "55" || res.RunID == "" {
		t.Fatalf("exec_tool: %d %s", code, stdout)
	}
	// The run is in the journal: agentos runs shows it.
	if code, stdout, _ := cli(t, "runs", "--root", root); code != 0 || !strings.Contains(stdout, res.RunID) {
		t.Fatalf("runs: %d %s", code, stdout)
	}
	if code, stdout, _ := cli(t, "call", "--root", root, "read_file", `{"path":"tools/math/fib.ts"}`); code != 0 || stdout != samples.FibTool {
		t.Fatalf("read_file prints the content as is: %d %q", code, stdout)
	}
	code, _, stderr = cli(t, "call", "--root", root, "write_file", `{"path":"agentos.json","content":"{}"}`)
	if code != 1 || !strings.Contains(stderr, `lacks the "write" right on "agentos.json"`) {
		t.Fatalf("refused write: %d %s", code, stderr)
	}
	code, stdout, _ = cli(t, "call", "--root", root, "--json", "read_file", `{"path":"tools/none.ts"}`)
	if code != 1 || !strings.Contains(stdout, `"error"`) {
		t.Fatalf("--json failure prints one error object: %d %s", code, stdout)
	}
	for _, bad := range [][]string{{"call", "--root", root, "rm_rf", "{}"}, {"call", "--root", root, "read_file", "[1]"}, {"call", "--root", root}} {
		if code, _, stderr := cli(t, bad...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}

// With a node serving the root, call, ps and events talk to it.
func TestCallPSEventsWithNode(t *testing.T) {
	root := toolRoot(t, map[string]string{samples.FibPath: samples.FibTool})
	if code, _, stderr := cli(t, "ps", "--root", root); code != 1 || !strings.Contains(stderr, "agentos serve") {
		t.Fatalf("ps without a node: %d %s", code, stderr)
	}
	rt, err := agentos.Start(context.Background(), agentos.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := admin.Dial(root); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the node never listened")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, stdout, stderr := cli(t, "call", "--root", root, "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":10}}`); code != 0 || !strings.Contains(stdout, `"result": 55`) {
		t.Fatalf("call on the node: %d %s %s", code, stdout, stderr)
	}
	_, _, _ = cli(t, "call", "--root", root, "write_file", `{"path":"x.ts","content":""}`)
	code, stdout, _ := cli(t, "ps", "--root", root)
	if code != 0 || !strings.Contains(stdout, "agent") || !strings.Contains(stdout, "waiting") {
		t.Fatalf("ps: %d %s", code, stdout)
	}
	code, stdout, _ = cli(t, "events", "--root", root)
	for _, want := range []string{"spawn", "charge", "refused", `write on "x.ts"`} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Fatalf("events lack %q: %d %s", want, code, stdout)
		}
	}
	code, stdout, _ = cli(t, "ps", "--root", root, "--json")
	var psOut struct{ Processes []map[string]any }
	err = json.Unmarshal([]byte(stdout), &psOut)
	ps := psOut.Processes
	if code != 0 || err != nil || len(ps) != 1 || ps[0]["calls"] != float64(1) {
		t.Fatalf("ps --json: %d %s", code, stdout)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
