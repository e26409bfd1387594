package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
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
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	waitListening(t, root, 10*time.Second)
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

// With a node serving the root, kill signals a process through the node's
// kernel actor: stop pauses it (ps says so), kill ends it naming the
// command, and a dead PID or a bad signal is refused.
func TestKillWithNode(t *testing.T) {
	root := toolRoot(t, map[string]string{samples.FibPath: samples.FibTool})
	if code, _, stderr := cli(t, "kill", "--root", root, "1"); code != 1 || !strings.Contains(stderr, "agentos serve") {
		t.Fatalf("kill without a node: %d %s", code, stderr)
	}
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	p, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Name: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	waitListening(t, root, 10*time.Second)
	pid := strconv.FormatUint(uint64(p.PID()), 10)
	if code, stdout, stderr := cli(t, "kill", "--root", root, "--signal", "stop", pid); code != 0 || !strings.Contains(stdout, "stop sent to "+pid) {
		t.Fatalf("kill --signal stop: %d %s %s", code, stdout, stderr)
	}
	if in := p.Info(); in.Status != kernel.Stopped {
		t.Fatalf("after stop: %+v", in)
	}
	if code, _, stderr := cli(t, "kill", "--root", root, "--signal", "hup", pid); code != 2 || !strings.Contains(stderr, "unknown signal") {
		t.Fatalf("kill --signal hup: %d %s", code, stderr)
	}
	if code, _, stderr := cli(t, "kill", "--root", root, pid); code != 0 {
		t.Fatalf("kill: %d %s", code, stderr)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if r, err := p.Wait(wctx); err != nil || r.String() != "killed: agentos kill" {
		t.Fatalf("reason %v %v", r, err)
	}
	if code, _, stderr := cli(t, "kill", "--root", root, pid); code != 1 || !strings.Contains(stderr, "no such process") {
		t.Fatalf("kill of a dead process: %d %s", code, stderr)
	}
}
