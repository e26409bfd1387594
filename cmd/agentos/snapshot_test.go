package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
)

// With a node serving the root: snapshot a process that has spent and has
// waiting messages, kill it in the same step, restore it from the
// journal: it has the same budget left and its messages; a second restore
// while it lives is refused, naming what to do.
func TestSnapshotRestoreWithNode(t *testing.T) {
	root := toolRoot(t, map[string]string{samples.FibPath: samples.FibTool})
	if code, _, stderr := cli(t, "snapshot", "--root", root, "agent"); code != 1 || !strings.Contains(stderr, "agentos serve") {
		t.Fatalf("snapshot without a node: %d %s", code, stderr)
	}
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	type seen struct {
		left float64
		msgs int
	}
	restored := make(chan seen, 1)
	main := func(ctx context.Context, p *kernel.Process) error {
		if !p.Restored() {
			if err := p.Charge(capability.ToolCalls, 4); err != nil {
				return err
			}
		} else {
			left, _ := p.Account().Left(capability.ToolCalls)
			restored <- seen{left: left, msgs: p.Mailbox()}
		}
		<-ctx.Done()
		return nil
	}
	if err := rt.Kernel().RegisterImage("worker", main); err != nil {
		t.Fatal(err)
	}
	p, err := rt.Kernel().Spawn(main, kernel.SpawnOptions{Name: "w", Image: "worker", Quota: capability.Limits{capability.ToolCalls: 10}})
	if err != nil {
		t.Fatal(err)
	}
	_ = rt.Kernel().Send(p.PID(), json.RawMessage(`{"job":1}`))
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
	code, stdout, stderr := cli(t, "snapshot", "--root", root, "--json", "--kill", "w")
	var info kernelclient.SnapshotInfo
	if code != 0 || json.Unmarshal([]byte(stdout), &info) != nil || info.ID == "" || info.Mailbox != 1 || info.Name != "w" {
		t.Fatalf("snapshot --kill: %d %q %s", code, stdout, stderr)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if r, _ := p.Wait(wctx); r.Kind != kernel.Killed {
		t.Fatalf("after snapshot --kill: %v", r)
	}
	code, stdout, stderr = cli(t, "restore", "--root", root, info.ID)
	if code != 0 || !strings.Contains(stdout, "(w)") {
		t.Fatalf("restore: %d %s %s", code, stdout, stderr)
	}
	if s := <-restored; s.left != 6 || s.msgs != 1 {
		t.Fatalf("the restored process has %v tool_calls left and %d messages, want 6 and 1", s.left, s.msgs)
	}
	// A snapshot restores once, even under another name; --fork runs a
	// copy (the name is still held by the first restore: --name).
	if code, _, stderr := cli(t, "restore", "--root", root, "--name", "w2", info.ID); code != 1 || !strings.Contains(stderr, "restored already") || !strings.Contains(stderr, "--fork") {
		t.Fatalf("second restore: %d %s", code, stderr)
	}
	if code, _, stderr := cli(t, "restore", "--root", root, "--fork", info.ID); code != 1 || !strings.Contains(stderr, "--name") {
		t.Fatalf("fork while the name is held: %d %s", code, stderr)
	}
	code, stdout, stderr = cli(t, "restore", "--root", root, "--fork", "--name", "w2", info.ID)
	if code != 0 || !strings.Contains(stdout, "(w2)") {
		t.Fatalf("restore --fork: %d %s %s", code, stdout, stderr)
	}
	if s := <-restored; s.left != 6 || s.msgs != 1 {
		t.Fatalf("the fork has %v tool_calls left and %d messages, want 6 and 1", s.left, s.msgs)
	}
	// an unknown id exits 2 as in trace, replay, persona show and recover --run (issue 25 item 12)
	if code, _, stderr := cli(t, "restore", "--root", root, "no-such-id"); code != 2 || !strings.Contains(stderr, "agentos runs") {
		t.Fatalf("restore of an unknown id: %d %s", code, stderr)
	}
	if code, _, _ := cli(t, "restore", "--root", root); code != 2 {
		t.Fatalf("restore without an id: %d", code)
	}
}
