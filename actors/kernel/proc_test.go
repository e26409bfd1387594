package kernel_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
)

var quiet = slog.New(slog.DiscardHandler)

func newKernel(t testing.TB, opts kernel.Options) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return k
}

func spawn(t testing.TB, k *kernel.Kernel, main kernel.Main, opts kernel.SpawnOptions) *kernel.Process {
	t.Helper()
	p, err := k.Spawn(main, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wait(t testing.TB, p *kernel.Process) kernel.Reason {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("process %v did not end: %v", p.PID(), err)
	}
	return r
}

// recvDown waits for the next *Down in p's mailbox.
func recvDown(t testing.TB, ctx context.Context, p *kernel.Process) *kernel.Down {
	t.Helper()
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			t.Fatalf("no Down: %v", err)
		}
		if d, ok := m.Body.(*kernel.Down); ok {
			return d
		}
	}
}

func block(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }

func TestExitReasons(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name string
		main kernel.Main
		opts kernel.SpawnOptions
		kill bool
		want string
	}{
		{name: "normal", main: func(context.Context, *kernel.Process) error { return nil }, want: "normal"},
		{name: "fault", main: func(context.Context, *kernel.Process) error { return errors.New("boom") }, want: "fault: boom"},
		{name: "panic", main: func(context.Context, *kernel.Process) error { panic("kaboom") }, want: "fault: panic: kaboom"},
		{name: "killed", main: block, kill: true, want: "killed: test"},
		{name: "deadline", main: block, opts: kernel.SpawnOptions{Deadline: 20 * time.Millisecond}, want: "deadline: 20ms"},
		{name: "quota", main: func(_ context.Context, p *kernel.Process) error {
			for {
				if err := p.Charge(capability.LLMTokens, 400); err != nil {
					return err
				}
			}
		}, opts: kernel.SpawnOptions{Quota: capability.Limits{capability.LLMTokens: 1000}}, want: "quota:llm_tokens"},
		{name: "exit", main: func(context.Context, *kernel.Process) error {
			return kernel.Exit(kernel.Reason{Kind: kernel.Shutdown})
		}, want: "shutdown"},
	}
	watcher := spawn(t, k, block, kernel.SpawnOptions{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The process starts once it is monitored, so it cannot end first.
			p := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
				if _, err := p.Recv(ctx); err != nil {
					return err
				}
				return tc.main(ctx, p)
			}, tc.opts)
			if err := watcher.Monitor(p.PID()); err != nil {
				t.Fatal(err)
			}
			if err := k.Send(p.PID(), "go"); err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				if err := k.Kill(p.PID(), "test"); err != nil {
					t.Fatal(err)
				}
			}
			d := recvDown(t, ctx, watcher)
			if d.PID != p.PID() || d.Reason.String() != tc.want {
				t.Fatalf("Down = %v %q, want %v %q", d.PID, d.Reason, p.PID(), tc.want)
			}
			if r := wait(t, p); r.String() != tc.want {
				t.Fatalf("Wait = %q, want %q", r, tc.want)
			}
		})
	}
	// Monitoring a process that is gone answers at once.
	if err := watcher.Monitor(9999); err != nil {
		t.Fatal(err)
	}
	if d := recvDown(t, ctx, watcher); d.Reason.Kind != kernel.NoProc {
		t.Fatalf("Down for an unknown pid = %v, want noproc", d.Reason)
	}
}

func TestSendRecvOrder(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	got := make(chan []int, 1)
	rx := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		var xs []int
		for len(xs) < 100 {
			m, err := p.Recv(ctx)
			if err != nil {
				return err
			}
			xs = append(xs, m.Body.(int))
		}
		got <- xs
		return nil
	}, kernel.SpawnOptions{})
	spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		for i := range 100 {
			if err := p.Send(rx.PID(), i); err != nil {
				return err
			}
		}
		return nil
	}, kernel.SpawnOptions{})
	xs := <-got
	for i, x := range xs {
		if x != i {
			t.Fatalf("message %d = %d: order lost", i, x)
		}
	}
	if r := wait(t, rx); r.Kind != kernel.Normal {
		t.Fatal(r)
	}
	if err := k.Send(rx.PID(), 1); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("send to a dead process: %v, want ErrNoProcess", err)
	}
}

func TestLinks(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// An abnormal exit kills the linked process...
	a := spawn(t, k, block, kernel.SpawnOptions{})
	b := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		if err := p.Link(a.PID()); err != nil {
			return err
		}
		return errors.New("b failed")
	}, kernel.SpawnOptions{})
	if r := wait(t, a); r.Kind != kernel.Killed || !strings.Contains(r.Detail, "b failed") {
		t.Fatalf("linked process ended with %q, want killed naming b's fault", r)
	}
	_ = b

	// ... a normal exit does not ...
	c := spawn(t, k, block, kernel.SpawnOptions{})
	d := spawn(t, k, func(ctx context.Context, p *kernel.Process) error { return p.Link(c.PID()) }, kernel.SpawnOptions{})
	wait(t, d)
	if _, dead := c.Reason(); dead {
		t.Fatal("a normal exit killed the linked process")
	}

	// A process trapping exits gets a Down instead: TestLinkedSpawnDown.
	_ = ctx
}

// A supervisor-like process traps exits: its linked child's fault arrives
// as a Down with Link set, and the supervisor lives on.
func TestLinkedSpawnDown(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sup := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}}})
	sup.TrapExits(true)
	child, err := sup.Spawn(func(context.Context, *kernel.Process) error { return errors.New("crash") }, kernel.SpawnOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	d := recvDown(t, ctx, sup)
	if d.PID != child.PID() || !d.Link || d.Reason.String() != "fault: crash" {
		t.Fatalf("Down = %+v", d)
	}
}

func TestNames(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	p := spawn(t, k, block, kernel.SpawnOptions{Name: "planner"})
	if pid, ok := k.Lookup("planner"); !ok || pid != p.PID() {
		t.Fatalf("Lookup = %v %v", pid, ok)
	}
	if _, err := k.Spawn(block, kernel.SpawnOptions{Name: "planner"}); !errors.Is(err, kernel.ErrNameTaken) {
		t.Fatalf("second planner: %v, want ErrNameTaken", err)
	}
	q := spawn(t, k, block, kernel.SpawnOptions{})
	if err := q.Register("planner"); !errors.Is(err, kernel.ErrNameTaken) {
		t.Fatalf("Register a taken name: %v", err)
	}
	if err := k.Kill(p.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Lookup("planner"); ok {
		t.Fatal("the name outlived its process")
	}
	if err := q.Register("planner"); err != nil {
		t.Fatalf("Register a freed name: %v", err)
	}
}

func TestStopContinueTerm(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan any, 10)
	p := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		for {
			m, err := p.Recv(ctx)
			if err != nil {
				return err
			}
			got <- m.Body
			if _, ok := m.Body.(*kernel.Term); ok {
				return kernel.Exit(kernel.Reason{Kind: kernel.Normal, Detail: "terminated cleanly"})
			}
		}
	}, kernel.SpawnOptions{})
	if err := k.Stop(p.PID()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := k.Send(p.PID(), i); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-got:
		t.Fatalf("a stopped process received %v", m)
	case <-time.After(30 * time.Millisecond):
	}
	if in := p.Info(); in.Status != kernel.Stopped || in.Mailbox != 3 {
		t.Fatalf("ps row of the stopped process: %+v", in)
	}
	if err := k.Continue(p.PID()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if m := <-got; m != i {
			t.Fatalf("after continue got %v, want %d", m, i)
		}
	}
	if err := k.Terminate(p.PID(), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := (<-got).(*kernel.Term); !ok {
		t.Fatal("Term not delivered")
	}
	if r, _ := p.Wait(ctx); r.Detail != "terminated cleanly" {
		t.Fatalf("reason %v: Term is catchable, the process chose how to end", r)
	}
	kinds := eventsOf(k, p.PID())
	want := "spawn::signal:stop:signal:cont:signal:term:exit:"
	if strings.Join(kinds, ":") != want {
		t.Fatalf("events = %v", kinds)
	}
}

func TestCapabilities(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	// No spawn right: refused, with the right named, and logged.
	p := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}})
	_, err := p.Spawn(block, kernel.SpawnOptions{})
	if !errors.Is(err, capability.ErrDenied) || !strings.Contains(err.Error(), `"spawn"`) {
		t.Fatalf("spawn without the right: %v", err)
	}
	evs := k.Events(0, 0)
	if last := evs[len(evs)-1]; last.Kind != kernel.EventRefused || last.PID != p.PID() {
		t.Fatalf("last event %+v, want the refusal", last)
	}

	// Amplification: a child cannot get more than its parent.
	parent := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}, {Right: capability.Read, Scope: "tools/"}}})
	if _, err := parent.Spawn(block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Write, Scope: "tools/"}}}); !errors.Is(err, capability.ErrAmplify) {
		t.Fatalf("amplified spawn: %v", err)
	}
	child, err := parent.Spawn(block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/math/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Check(capability.Read, "tools/math/fib.ts"); err != nil {
		t.Fatal(err)
	}
	if err := child.Check(capability.Read, "tools/secret.ts"); !errors.Is(err, capability.ErrDenied) {
		t.Fatalf("read outside the scope: %v", err)
	}
	// The parent's exit revokes its tokens, and transitively the child's.
	if err := k.Kill(parent.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	if err := child.Check(capability.Read, "tools/math/fib.ts"); !errors.Is(err, capability.ErrRevoked) {
		t.Fatalf("use after the parent's exit: %v, want ErrRevoked", err)
	}
	// Forgery: a token changed by hand fails its signature.
	tok, _ := p.Token()
	tok.Grants = append(tok.Grants, capability.Grant{Right: capability.Write})
	if err := k.Authority().Check(tok, p.Holder(), capability.Write, "tools/x.ts"); err == nil {
		t.Fatal("a forged token passed")
	}
}

func TestExpiredToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	auth, err := capability.NewAuthority(nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	k := newKernel(t, kernel.Options{Logger: quiet, Authority: auth})
	p := spawn(t, k, block, kernel.SpawnOptions{
		Grants:  []capability.Grant{{Right: capability.Exec, Scope: "tools/"}},
		Caveats: capability.Caveats{NotAfter: now.Add(time.Minute), MaxUses: 2},
	})
	if err := p.Check(capability.Exec, "tools/a.ts"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if err := p.Check(capability.Exec, "tools/a.ts"); !errors.Is(err, capability.ErrExpired) {
		t.Fatalf("expired token: %v", err)
	}
}

func TestQuotaTree(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet, Quota: capability.Limits{capability.ToolCalls: 100}})
	parent := spawn(t, k, block, kernel.SpawnOptions{
		Grants: []capability.Grant{{Right: capability.Spawn}},
		Quota:  capability.Limits{capability.Children: 2, capability.ToolCalls: 50},
	})
	greedy, err := parent.Spawn(block, kernel.SpawnOptions{Quota: capability.Limits{capability.ToolCalls: 10}})
	if err != nil {
		t.Fatal(err)
	}
	sibling, err := parent.Spawn(block, kernel.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := greedy.Charge(capability.ToolCalls, 1); err != nil {
			t.Fatal(err)
		}
	}
	var qe *capability.QuotaError
	if err := greedy.Charge(capability.ToolCalls, 1); !errors.As(err, &qe) || qe.Meter != capability.ToolCalls {
		t.Fatalf("11th call: %v", err)
	}
	if r := wait(t, greedy); r.String() != "quota:tool_calls" {
		t.Fatalf("offender ended with %q", r)
	}
	if _, dead := sibling.Reason(); dead {
		t.Fatal("the sibling was ended with the offender")
	}
	// Charged all the way up.
	if u := k.Account().Used(capability.ToolCalls); u != 10 {
		t.Fatalf("root used %g tool calls, want 10", u)
	}
	// The offender's exit freed its children slot: a new child fits.
	third, err := parent.Spawn(block, kernel.SpawnOptions{})
	if err != nil {
		t.Fatalf("spawn after a child exited: %v", err)
	}
	// Both slots taken again: the next spawn exceeds the quota and ends the parent.
	if _, err := parent.Spawn(block, kernel.SpawnOptions{}); !errors.As(err, &qe) || qe.Meter != capability.Children {
		t.Fatalf("third concurrent child: %v", err)
	}
	if r := wait(t, parent); r.String() != "quota:children" {
		t.Fatalf("parent ended with %q", r)
	}
	_ = third
}

func TestPS(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	p := spawn(t, k, block, kernel.SpawnOptions{Name: "worker", Image: "agent", Quota: capability.Limits{capability.ToolCalls: 5}})
	if err := p.Charge(capability.ToolCalls, 2); err != nil {
		t.Fatal(err)
	}
	_ = k.Send(p.PID(), "hello")
	ps := k.PS()
	if len(ps) != 1 {
		t.Fatalf("ps = %+v", ps)
	}
	row := ps[0]
	if row.Name != "worker" || row.Image != "agent" || row.Mailbox != 1 || row.Usage[capability.ToolCalls] != 2 || row.Left[capability.ToolCalls] != 3 {
		t.Fatalf("ps row = %+v", row)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	k, err := kernel.New(kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*kernel.Process
	for range 10 {
		ps = append(ps, spawn(t, k, block, kernel.SpawnOptions{}))
	}
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if r, dead := p.Reason(); !dead || r.Kind != kernel.Shutdown {
			t.Fatalf("after Close: %v %v", r, dead)
		}
	}
	if _, err := k.Spawn(block, kernel.SpawnOptions{}); !errors.Is(err, kernel.ErrClosed) {
		t.Fatalf("spawn after Close: %v", err)
	}
}

// wall_ms is a lifetime: the process ends with quota:wall_ms, and a child
// spawned later never outlives its parent's deadline.
func TestWallQuota(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	parent := spawn(t, k, block, kernel.SpawnOptions{Grants: spawnRight, Quota: capability.Limits{capability.WallMS: 60}})
	child, err := parent.Spawn(block, kernel.SpawnOptions{Quota: capability.Limits{capability.WallMS: 60_000}})
	if err != nil {
		t.Fatal(err)
	}
	if left := child.Info().Left[capability.WallMS]; left > 60 {
		t.Fatalf("child's wall time left = %g ms, want at most its parent's 60", left)
	}
	if r := wait(t, parent); r.String() != "quota:wall_ms" {
		t.Fatalf("parent: %v", r)
	}
	if r := wait(t, child); r.Kind != kernel.Quota && r.Kind != kernel.Killed {
		t.Fatalf("child: %v", r)
	}
	if err := parent.Charge(capability.ToolCalls, 1); !errors.Is(err, kernel.ErrExited) {
		t.Fatalf("a dead handle charged: %v", err)
	}
}

// A stopped process with a Term waiting ends on it as soon as it is
// continued: the event log shows the continue before the exit it led to.
func TestContinueIsRecordedBeforeWhatItLetsHappen(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		for {
			m, err := p.Recv(ctx)
			if err != nil {
				return err
			}
			if _, ok := m.Body.(*kernel.Term); ok {
				return nil
			}
		}
	}, kernel.SpawnOptions{})
	if err := k.Stop(p.PID()); err != nil {
		t.Fatal(err)
	}
	if err := k.Terminate(p.PID(), 0); err != nil {
		t.Fatal(err)
	}
	if err := k.Continue(p.PID()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	kinds := eventsOf(k, p.PID())
	if want := "spawn::signal:stop:signal:term:signal:cont:exit:"; strings.Join(kinds, ":") != want {
		t.Fatalf("events = %v, want %s", kinds, want)
	}
}

// eventsOf lists pid's kernel events as "kind:detail", oldest first.
func eventsOf(k *kernel.Kernel, pid kernel.PID) []string {
	var kinds []string
	for _, e := range k.Events(0, 0) {
		if e.PID == pid {
			kinds = append(kinds, string(e.Kind)+":"+e.Detail)
		}
	}
	return kinds
}
