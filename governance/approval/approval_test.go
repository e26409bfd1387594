package approval_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/governance/approval"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, path string) *approval.Store {
	t.Helper()
	s, err := approval.OpenStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var ask = approval.Ask{Path: "tools/x.ts", Hash: strings.Repeat("a", 64), Risk: "high", Reasons: []string{"eval"}, By: "agent"}

// waitWaiting waits until a run waits on the request of a's version.
func waitWaiting(t *testing.T, g *approval.Gate) approval.Request {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		rs, err := g.List(approval.StatePending)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 1 && rs[0].Waiting > 0 {
			return rs[0]
		}
	}
	t.Fatal("no run waits")
	return approval.Request{}
}

func TestAwaitApproved(t *testing.T) {
	g := approval.NewGate(open(t, filepath.Join(t.TempDir(), "a.db")), approval.Policy{}, nil)
	done := make(chan error, 1)
	go func() { done <- g.Await(context.Background(), ask, time.Minute) }()
	r := waitWaiting(t, g)
	if r.Path != ask.Path || r.Hash != ask.Hash || r.RequestedBy != "agent" {
		t.Errorf("pending %+v", r)
	}
	d, err := g.Decide(r.ID, true, "cli:alice", "ok")
	if err != nil || d.State != approval.StateApproved || d.Waiting != 1 || d.DecidedBy != "cli:alice" {
		t.Fatalf("decide: %+v %v", d, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the approved run: %v", err)
	}
	// The version stays approved: the next run does not wait.
	if err := g.Await(context.Background(), ask, time.Nanosecond); err != nil {
		t.Errorf("second run: %v", err)
	}
	// A changed tool is a new version: it needs a new approval.
	changed := ask
	changed.Hash = strings.Repeat("b", 64)
	if err := g.Await(context.Background(), changed, 10*time.Millisecond); !errors.Is(err, approval.ErrTimeout) {
		t.Errorf("changed version: %v, want approval_timeout", err)
	}
}

func TestAwaitDeniedAndTimeout(t *testing.T) {
	g := approval.NewGate(open(t, filepath.Join(t.TempDir(), "a.db")), approval.Policy{Timeout: 20 * time.Millisecond}, nil)
	err := g.Await(context.Background(), ask, 0)
	var ge *approval.Error
	if !errors.As(err, &ge) || ge.Code != approval.CodeTimeout || !strings.Contains(err.Error(), "agentos approve "+ge.Request.ID) {
		t.Fatalf("timeout: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = g.Await(context.Background(), ask, time.Minute) })
	}
	for {
		if r := waitWaiting(t, g); r.Waiting == len(errs) {
			break
		}
	}
	if _, err := g.Decide(ge.Request.ID, false, "cli:bob", "it reads secrets"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, approval.ErrDenied) || !strings.Contains(err.Error(), "it reads secrets") || !strings.Contains(err.Error(), "cli:bob") {
			t.Errorf("denied run: %v", err)
		}
	}
	// An approval overrides the denial; the log keeps every step.
	if _, err := g.DecideVersion(ask, true, "go-api", ""); err != nil {
		t.Fatal(err)
	}
	if err := g.Await(context.Background(), ask, time.Nanosecond); err != nil {
		t.Errorf("after the approval: %v", err)
	}
	log, err := g.Store().Log()
	if err != nil || len(log) != 3 || log[0].Event != "requested" || log[1].Event != "denied" || log[2].Event != "approved" {
		t.Errorf("log %+v %v", log, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := ask
	other.Path = "tools/y.ts"
	if err := g.Await(ctx, other, time.Minute); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stays pending") {
		t.Errorf("cancelled wait: %v", err)
	}
}

// A pending request survives the store being reopened (a node restart),
// and a decision another process writes in the file reaches a waiting run.
func TestRestartAndAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s := open(t, path)
	r, created, err := s.Ask(ask)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	s.Close()
	s2 := open(t, path)
	again, created, err := s2.Ask(ask)
	if err != nil || created || again.ID != r.ID || again.State != approval.StatePending {
		t.Fatalf("after reopening: %+v created=%v %v", again, created, err)
	}
	old := approval.PollInterval
	approval.PollInterval = 5 * time.Millisecond
	defer func() { approval.PollInterval = old }()
	g := approval.NewGate(s2, approval.Policy{}, nil)
	done := make(chan error, 1)
	go func() { done <- g.Await(context.Background(), ask, time.Minute) }()
	waitWaiting(t, g)
	// Another process's store on the same file (its own gate, no waiter).
	other := approval.NewGate(open(t, path), approval.Policy{}, nil)
	found, ok, err := other.Store().Resolve(r.ID[:6])
	if err != nil || !ok || found.ID != r.ID {
		t.Fatalf("resolve by prefix: %+v %v %v", found, ok, err)
	}
	if _, err := other.Decide(r.ID, true, "cli:carol", ""); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the run approved by another process: %v", err)
	}
}

func TestPolicy(t *testing.T) {
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	for _, c := range []struct {
		pol   approval.Policy
		path  string
		risk  string
		holds func(string) bool
		want  bool
	}{
		{approval.Policy{}, "tools/x.ts", "high", all, true},
		{approval.Policy{}, "tools/x.ts", "critical", all, true},
		{approval.Policy{}, "tools/x.ts", "medium", all, false},
		{approval.Policy{Off: true}, "tools/x.ts", "critical", all, false},
		{approval.Policy{Levels: []string{"medium"}}, "tools/x.ts", "medium", all, true},
		{approval.Policy{Paths: []string{"tools/pay/"}}, "tools/x.ts", "high", all, false},
		{approval.Policy{Paths: []string{"tools/pay/"}}, "tools/pay/x.ts", "high", all, true},
		{approval.Policy{Paths: []string{"tools/*.ts"}}, "tools/x.ts", "high", all, true},
		{approval.Policy{Rights: []string{"write"}}, "tools/x.ts", "high", none, false},
		{approval.Policy{Rights: []string{"write"}}, "tools/x.ts", "high", all, true},
	} {
		if got := c.pol.Needs(c.path, c.risk, c.holds); got != c.want {
			t.Errorf("%+v.Needs(%s, %s) = %v", c.pol, c.path, c.risk, got)
		}
	}
	for _, bad := range []approval.Policy{{Levels: []string{"severe"}}, {Paths: []string{"/etc/"}}, {Paths: []string{"../x"}}, {Timeout: -1}} {
		if err := bad.Validate("governance.approval"); err == nil {
			t.Errorf("%+v validates", bad)
		}
	}
}

func TestNotFound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	open(t, path)
	if _, ok, err := open(t, path).Resolve("a-zz"); ok || !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("a too short id: %v %v", ok, err)
	}
	if _, err := open(t, path).Decide("a-000000000000", true, "x", ""); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("decide an unknown id: %v", err)
	}
}

// A path with several versions pending names none of them: approving
// "the newest" could approve a version nobody reviewed. path@<hash> (of
// the request or of its entry, Source) picks one.
func TestResolvePathWithSeveralVersions(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "approvals.db"))
	a1, a2 := ask, ask
	a2.Hash = strings.Repeat("b", 64)
	a2.Source = strings.Repeat("c", 64)
	r1, _, err := s.Ask(a1)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.Resolve("tools/x.ts"); err != nil || !ok || r.ID != r1.ID {
		t.Fatalf("one pending version: %+v %v %v", r, ok, err)
	}
	r2, _, err := s.Ask(a2)
	if err != nil {
		t.Fatal(err)
	}
	_, ok, err := s.Resolve("tools/x.ts")
	if !errors.Is(err, approval.ErrAmbiguous) || ok || !strings.Contains(err.Error(), r1.ID) || !strings.Contains(err.Error(), r2.ID) {
		t.Fatalf("two pending versions by path: %v %v", ok, err)
	}
	for target, want := range map[string]string{"tools/x.ts@aaaaaaaa": r1.ID, "tools/x.ts@BBBBBBBBBB": r2.ID, "tools/x.ts@cccccccc": r2.ID} {
		if r, ok, err := s.Resolve(target); err != nil || !ok || r.ID != want {
			t.Errorf("%s: %+v %v %v, want %s", target, r, ok, err, want)
		}
	}
	if _, ok, err := s.Resolve("tools/x.ts@dddddddd"); err != nil || ok {
		t.Errorf("an unknown version: %v %v", ok, err)
	}
	if _, _, err := s.Resolve("tools/x.ts@aaaa"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("a short version: %v", err)
	}
	if r2.Source != a2.Source || r1.Source != "" {
		t.Errorf("the entry's hash is not kept: %+v %+v", r1, r2)
	}
}

// A run of an approved version reads the file and writes nothing (no
// write transaction, no fsync).
func TestAwaitApprovedWritesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "approvals.db")
	s := open(t, p)
	g := approval.NewGate(s, approval.Policy{}, nil)
	if _, err := g.DecideVersion(ask, true, "test", ""); err != nil {
		t.Fatal(err)
	}
	txid := func() int {
		db, err := bolt.Open(p, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tx, err := db.Begin(false)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		return tx.ID()
	}
	before := txid()
	for range 3 {
		if err := g.Await(context.Background(), ask, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if after := txid(); after != before {
		t.Errorf("Await of an approved version wrote %d transactions", after-before)
	}
}
