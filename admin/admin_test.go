package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/journal"
)

var quiet = slog.New(slog.DiscardHandler)

// kernelBackend serves a real kernel through a real kernel actor; the
// runtime's parts (tool calls, the journal) are the root package's and
// tested there (TestNodeJournalEndpoints, TestSocketFloodOfRefusedCalls).
type kernelBackend struct {
	client kernelclient.Client
}

var errNotHere = errors.New("not served by this test's backend")

func (b kernelBackend) Kernel() kernelclient.Client { return b.client }
func (b kernelBackend) MaxArgs() int                { return 1024 }
func (b kernelBackend) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errNotHere
}
func (b kernelBackend) Runs(journal.RunQuery) ([]admin.RunSummary, error) { return nil, errNotHere }
func (b kernelBackend) Run(string) (journal.Dump, error)                  { return journal.Dump{}, errNotHere }
func (b kernelBackend) Exec(context.Context, admin.ExecRequest) (admin.ExecReply, error) {
	return admin.ExecReply{}, errNotHere
}
func (b kernelBackend) Recover(context.Context, admin.RecoverRequest) (any, error) {
	return nil, &admin.StatusError{Code: http.StatusConflict, Err: errNotHere}
}
func (b kernelBackend) Metrics() http.Handler       { return nil }
func (b kernelBackend) MCP() http.Handler           { return nil }
func (b kernelBackend) Kernels() []admin.NodeKernel { return nil }
func (b kernelBackend) Cluster(context.Context) (any, error) {
	return nil, &admin.StatusError{Code: http.StatusNotFound, Err: errNotHere}
}
func (b kernelBackend) Memory(context.Context, admin.MemoryRequest) (any, error) {
	return nil, &admin.StatusError{Code: http.StatusNotFound, Err: errNotHere}
}

type node struct {
	k    *kernel.Kernel
	sys  *system.System
	kc   kernelclient.Client
	c    *admin.Client
	root string
}

// serve boots a kernel, its actor and the admin socket over a fresh root.
func serve(t *testing.T) *node {
	t.Helper()
	k, err := kernel.New(kernel.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sys := system.New(system.Options{Logger: quiet})
	kc := kernelclient.Client{PID: sys.Spawn(kernel.Props(k)), Root: sys.Root()}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".agentos"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var shutdowns sync.WaitGroup
	served := make(chan error, 1)
	go func() {
		served <- admin.Serve(ctx, admin.Options{Root: root, Backend: kernelBackend{kc}, Shutdowns: &shutdowns})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		shutdowns.Wait()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = k.Close(cctx)
		_ = sys.Shutdown(5 * time.Second)
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := admin.Dial(root)
		if err == nil {
			t.Cleanup(c.Close)
			return &node{k: k, sys: sys, kc: kc, c: c, root: root}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node never served: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// socketHTTP is a plain HTTP client of root's node socket, for statuses.
func socketHTTP(t *testing.T, root string) *http.Client {
	path := filepath.Join(root, admin.Socket)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func blocker(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }

// TestSocketPSEventsSignal: ps, events and signals on the socket reach the
// kernel's process table (through its actor): a process shows in ps, a kill
// by signal ends it with the socket named as the killer, events show the
// signal and the exit, and a dead or unknown target is refused.
func TestSocketPSEventsSignal(t *testing.T) {
	n := serve(t)
	ctx := context.Background()
	p, err := n.k.Spawn(blocker, kernel.SpawnOptions{Name: "worker", Image: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := n.c.PS(ctx)
	if err != nil || len(ps) != 1 || ps[0].PID != p.PID() || ps[0].Name != "worker" || ps[0].Image != "agent" || ps[0].Started.IsZero() {
		t.Fatalf("ps = %+v, %v", ps, err)
	}
	if err := n.c.Signal(ctx, admin.SignalRequest{PID: uint64(p.PID()), Signal: "stop"}); err != nil {
		t.Fatal(err)
	}
	if ps, _ := n.c.PS(ctx); ps[0].Status != kernel.Stopped {
		t.Fatalf("after stop: %+v", ps)
	}
	if err := n.c.Signal(ctx, admin.SignalRequest{PID: uint64(p.PID()), Signal: "hup"}); err == nil || !strings.Contains(err.Error(), "kill, term, stop or cont") {
		t.Fatalf("an unknown signal: %v", err)
	}
	if err := n.c.Signal(ctx, admin.SignalRequest{PID: uint64(p.PID()), Signal: "kill"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if r, err := p.Wait(wctx); err != nil || r.String() != "killed: admin socket" {
		t.Fatalf("reason %v, %v", r, err)
	}
	if err := n.c.Signal(ctx, admin.SignalRequest{PID: uint64(p.PID()), Signal: "kill"}); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("kill of a dead process: %v", err)
	}
	evs, err := n.c.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind)+":"+e.Detail+e.Reason)
	}
	if got := strings.Join(kinds, " "); got != "spawn:agent signal:stop signal:kill exit:killed: admin socket" {
		t.Fatalf("events %q", got)
	}
	if last, err := n.c.Events(ctx, evs[len(evs)-2].Seq, 0); err != nil || len(last) != 1 || last[0].Kind != kernel.EventExit {
		t.Fatalf("events after %d: %+v, %v", evs[len(evs)-2].Seq, last, err)
	}
	if ps, err := n.c.PS(ctx); err != nil || ps == nil || len(ps) != 0 {
		t.Fatalf("ps of an empty table = %#v, %v, want an empty list", ps, err)
	}
}

// TestSocketPSIsAMessageToTheKernelActor: with the kernel actor stopped,
// ps and events fail (they are messages to it, not calls on the Kernel),
// while the process table itself is intact.
func TestSocketPSIsAMessageToTheKernelActor(t *testing.T) {
	n := serve(t)
	if _, err := n.k.Spawn(blocker, kernel.SpawnOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.sys.Root().StopFuture(n.kc.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.c.PS(ctx); err == nil || !strings.Contains(err.Error(), "kernel actor") {
		t.Fatalf("ps with the kernel actor stopped: %v, want an error naming it", err)
	}
	if _, err := n.c.Events(ctx, 0, 0); err == nil {
		t.Fatal("events with the kernel actor stopped answered")
	}
	if len(n.k.PS()) != 1 {
		t.Fatal("the process table lost its process")
	}
}

// TestSocketLimitsAndStatuses: a body over MaxArgs is refused 413 naming
// limits.max_args_bytes before the backend sees it; a backend's
// StatusError chooses the status; a second node on the root is refused.
func TestSocketLimitsAndStatuses(t *testing.T) {
	n := serve(t)
	ctx := context.Background()
	big := json.RawMessage(`{"s":"` + strings.Repeat("x", 2048) + `"}`)
	if _, err := n.c.Call(ctx, "list_files", big); err == nil || !strings.Contains(err.Error(), "max_args_bytes") {
		t.Fatalf("a call over the limit: %v", err)
	}
	if _, err := n.c.Call(ctx, "list_files", json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), errNotHere.Error()) {
		t.Fatalf("a call: %v, want the backend's error", err)
	}
	if err := n.c.Recover(ctx, admin.RecoverRequest{}, new(any)); err == nil || !strings.Contains(err.Error(), errNotHere.Error()) {
		t.Fatalf("recover: %v", err)
	}
	hc := socketHTTP(t, n.root)
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/v1/recover", `{}`, http.StatusConflict},
		{"/v1/call/list_files", string(big), http.StatusRequestEntityTooLarge},
		{"/v1/signal", `{"pid": 999, "signal": "kill"}`, http.StatusNotFound},
		{"/v1/signal", `{"pid": 999, "signal": "hup"}`, http.StatusBadRequest},
		{"/v1/exec", `{}`, http.StatusBadRequest},
	} {
		resp, err := hc.Post("http://node"+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %s %.40s: %s, want %d", c.path, c.body, resp.Status, c.want)
		}
	}
	err := admin.Serve(ctx, admin.Options{Root: n.root, Backend: kernelBackend{n.kc}})
	if err == nil || !strings.Contains(err.Error(), "already serving") {
		t.Fatalf("a second node on the root: %v", err)
	}
	if _, err := admin.Dial(t.TempDir()); !errors.Is(err, admin.ErrNoNode) {
		t.Fatalf("dial of a root with no node: %v", err)
	}
}
