package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/kernel/kernelpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

// startKernelActor serves k with a kernel actor and returns its client.
func startKernelActor(t testing.TB, k *kernel.Kernel) (kernelclient.Client, *system.System) {
	t.Helper()
	sys := system.New(system.Options{Logger: quiet})
	t.Cleanup(func() { _ = sys.Shutdown(5 * time.Second) })
	return kernelclient.Client{PID: sys.Spawn(kernel.Props(k)), Root: sys.Root()}, sys
}

func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// echoTo is a Main passing every message it receives to ch.
func echoTo(ch chan<- kernel.Message) kernel.Main {
	return func(ctx context.Context, p *kernel.Process) error {
		for {
			m, err := p.Recv(ctx)
			if err != nil {
				return nil
			}
			ch <- m
		}
	}
}

func blocker(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }

// TestKernelMessagesCrossNodes: every message of kernel.proto can be sent
// to another node, and each is listed here with its role, so a message
// added to the .proto without being handled (or listed) fails this test.
func TestKernelMessagesCrossNodes(t *testing.T) {
	roles := map[string]string{
		"PS": "request", "PSReply": "reply", "EventsQuery": "request", "EventsReply": "reply",
		"Signal": "request", "SignalReply": "reply", "Spawn": "request", "Spawned": "reply",
		"Send": "request", "Sent": "reply", "Monitor": "request", "Monitored": "reply",
		"Demonitor": "request", "Demonitored": "reply", "Down": "notice", "Charge": "request", "Charged": "reply",
		"Refund": "request", "Refunded": "reply", "Refused": "note",
		"Snapshot": "request", "SnapshotTaken": "reply", "Restore": "request", "Restored": "reply",
		"Failure": "part", "QuotaRefusal": "part", "ProcInfo": "part", "Event": "part", "Grant": "part",
	}
	msgs := kernelpb.File_actors_kernel_kernelpb_kernel_proto.Messages()
	if msgs.Len() != len(roles) {
		t.Errorf("kernel.proto has %d messages, this test lists %d: list (and handle) the new ones", msgs.Len(), len(roles))
	}
	for i := 0; i < msgs.Len(); i++ {
		d := msgs.Get(i)
		if _, ok := roles[string(d.Name())]; !ok {
			t.Errorf("message %s is not listed: handle it in the kernel actor's Receive and list it here", d.Name())
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
		if err != nil {
			t.Fatalf("%s: %v", d.FullName(), err)
		}
		if err := system.CheckRemote(mt.New().Interface()); err != nil {
			t.Errorf("%s: %v", d.FullName(), err)
		}
	}
}

// TestKernelActorPSAndEvents: ps and events through the kernel actor show
// the table and the event log as the Kernel's methods do.
func TestKernelActorPSAndEvents(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(t, k)
	ctx := tctx(t)
	p := spawn(t, k, blocker, kernel.SpawnOptions{Name: "worker", Image: "agent", Quota: capability.Limits{capability.ToolCalls: 5}})
	if err := p.Charge(capability.ToolCalls, 2); err != nil {
		t.Fatal(err)
	}
	ps, err := c.PS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := k.PS()
	if len(ps) != 1 || len(want) != 1 {
		t.Fatalf("PS = %+v, want one process", ps)
	}
	got := ps[0]
	if got.PID != p.PID() || got.Name != "worker" || got.Image != "agent" || got.Status != want[0].Status ||
		got.Usage[capability.ToolCalls] != 2 || got.Left[capability.ToolCalls] != 3 || !got.Started.Equal(want[0].Started) {
		t.Fatalf("PS row %+v, want %+v", got, want[0])
	}
	evs, err := c.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	direct := k.Events(0, 0)
	if len(evs) != len(direct) || len(evs) < 2 {
		t.Fatalf("Events = %+v, want %+v", evs, direct)
	}
	for i := range evs {
		if evs[i].Seq != direct[i].Seq || evs[i].Kind != direct[i].Kind || evs[i].PID != direct[i].PID || !evs[i].Time.Equal(direct[i].Time) ||
			evs[i].Meter != direct[i].Meter || evs[i].Amount != direct[i].Amount || evs[i].Detail != direct[i].Detail {
			t.Fatalf("event %d = %+v, want %+v", i, evs[i], direct[i])
		}
	}
	last, err := c.Events(ctx, 0, 1)
	if err != nil || len(last) != 1 || last[0].Seq != direct[len(direct)-1].Seq {
		t.Fatalf("Events(limit 1) = %+v, %v", last, err)
	}
	if after, err := c.Events(ctx, direct[len(direct)-1].Seq, 0); err != nil || len(after) != 0 {
		t.Fatalf("Events after the last = %+v, %v", after, err)
	}
}

// TestKernelActorSignal: kill, term, stop and cont by message, and the
// errors of a dead target and an unknown signal crossing back as the
// kernel's sentinel errors.
func TestKernelActorSignal(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(t, k)
	ctx := tctx(t)

	got := make(chan kernel.Message, 4)
	p := spawn(t, k, echoTo(got), kernel.SpawnOptions{})
	if err := c.Signal(ctx, p.PID(), "stop", ""); err != nil {
		t.Fatal(err)
	}
	if ps := k.PS(); ps[0].Status != kernel.Stopped {
		t.Fatalf("after stop: %+v", ps)
	}
	if err := c.Signal(ctx, p.PID(), "cont", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(ctx, p.PID(), "term", ""); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m.Body.(*kernel.Term) == nil {
		t.Fatalf("term delivered %+v", m)
	}
	if err := c.Signal(ctx, p.PID(), "hup", ""); !errors.Is(err, kernel.ErrInvalid) || !strings.Contains(err.Error(), "kill, term, stop or cont") {
		t.Fatalf("unknown signal: %v", err)
	}
	if err := c.Kill(ctx, p.PID(), "the operator"); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, p); r.Kind != kernel.Killed || r.Detail != "the operator" {
		t.Fatalf("reason %v", r)
	}
	err := c.Kill(ctx, p.PID(), "x")
	var re *kernel.RemoteError
	if !errors.Is(err, kernel.ErrNoProcess) || !errors.As(err, &re) || re.Code != "no_process" {
		t.Fatalf("kill of a dead process: %v", err)
	}
}

// TestKernelActorSpawn: a registered image spawned by message, by the
// kernel and as a child of a process (whose rights and quota bound it);
// an unknown image names the registered ones.
func TestKernelActorSpawn(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(t, k)
	ctx := tctx(t)

	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "agent"}); !errors.Is(err, kernel.ErrInvalid) || !strings.Contains(err.Error(), "none is") {
		t.Fatalf("spawn with no image registered: %v", err)
	}
	started := make(chan kernel.PID, 4)
	if err := k.RegisterImage("agent", func(ctx context.Context, p *kernel.Process) error {
		started <- p.PID()
		<-ctx.Done()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := k.RegisterImage("idle", blocker); err != nil {
		t.Fatal(err)
	}
	if err := k.RegisterImage("", blocker); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("RegisterImage without a name: %v", err)
	}
	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "nope"}); !errors.Is(err, kernel.ErrInvalid) || !strings.Contains(err.Error(), "agent, idle") {
		t.Fatalf("unknown image: %v", err)
	}

	pid, err := c.Spawn(ctx, kernelclient.SpawnRequest{
		Image: "agent", Name: "boss", Grants: []capability.Grant{{Right: capability.Spawn}, {Right: capability.Read, Scope: "tools/"}},
		Quota: capability.Limits{capability.Children: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-started; got != pid {
		t.Fatalf("the image ran as %v, spawned %v", got, pid)
	}
	boss := k.Process(pid)
	if boss == nil || boss.Name() != "boss" || boss.Info().Image != "agent" || !boss.Covers(capability.Read, "tools/x.ts") || boss.Covers(capability.Write, "tools/x.ts") {
		t.Fatalf("spawned process %+v", boss)
	}
	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Name: "boss"}); !errors.Is(err, kernel.ErrNameTaken) {
		t.Fatalf("a taken name: %v", err)
	}

	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: pid, Grants: []capability.Grant{{Right: capability.Write}}}); !errors.Is(err, capability.ErrAmplify) {
		t.Fatalf("a child asking for a right its parent lacks: %v", err)
	}

	child, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: pid, Link: true, Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if in := k.Process(child).Info(); in.Parent != pid {
		t.Fatalf("child %+v, want parent %v", in, pid)
	}
	_, err = c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: pid})
	var qe *capability.QuotaError
	if !errors.As(err, &qe) || qe.Meter != capability.Children {
		t.Fatalf("a second child over children=1: %v", err)
	}
	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: 999}); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("a dead parent: %v", err)
	}
	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Link: true}); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("link without a parent: %v", err)
	}
	norights, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: norights}); !errors.Is(err, capability.ErrDenied) {
		t.Fatalf("spawn from a process without the spawn right: %v", err)
	}
}

// TestKernelActorSend: a JSON body reaches a process by pid and by name.
func TestKernelActorSend(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(t, k)
	ctx := tctx(t)
	got := make(chan kernel.Message, 2)
	p := spawn(t, k, echoTo(got), kernel.SpawnOptions{Name: "inbox"})

	if err := c.Send(ctx, p.PID(), json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m.From != 0 || string(m.Body.(json.RawMessage)) != `{"n":1}` {
		t.Fatalf("received %+v", m)
	}
	pid, err := c.SendName(ctx, "inbox", json.RawMessage(`"hi"`))
	if err != nil || pid != p.PID() {
		t.Fatalf("SendName = %v, %v", pid, err)
	}
	if m := <-got; string(m.Body.(json.RawMessage)) != `"hi"` {
		t.Fatalf("received %+v", m)
	}
	if _, err := c.SendName(ctx, "nobody", json.RawMessage(`1`)); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("send to an unknown name: %v", err)
	}
	if err := c.Send(ctx, p.PID(), json.RawMessage(`{not json`)); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("send of a body that is not JSON: %v", err)
	}
	if err := c.Send(ctx, 999, json.RawMessage(`1`)); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("send to a dead pid: %v", err)
	}
}

// TestKernelActorMonitor: a watching actor receives a Down with the
// reason when the process ends, a noproc Down for a dead one, and none
// after Demonitor.
func TestKernelActorMonitor(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, sys := startKernelActor(t, k)
	ctx := tctx(t)
	downs := make(chan *kernelpb.Down, 8)
	watcher := sys.Spawn(actor.PropsFromFunc(func(ac actor.Context) {
		if d, ok := ac.Message().(*kernelpb.Down); ok {
			downs <- d
		}
	}))
	next := func() *kernelpb.Down {
		t.Helper()
		select {
		case d := <-downs:
			return d
		case <-ctx.Done():
			t.Fatal("no Down")
			return nil
		}
	}

	p := spawn(t, k, func(ctx context.Context, p *kernel.Process) error {
		_, err := p.Recv(ctx)
		if err != nil {
			return nil
		}
		return errors.New("boom")
	}, kernel.SpawnOptions{Name: "faulty"})
	if err := c.Monitor(ctx, p.PID(), watcher); err != nil {
		t.Fatal(err)
	}
	if err := c.Monitor(ctx, p.PID(), watcher); err != nil { // twice: still one Down
		t.Fatal(err)
	}
	if err := k.Send(p.PID(), "go"); err != nil {
		t.Fatal(err)
	}
	d := next()
	if d.GetPid() != uint64(p.PID()) || d.GetName() != "faulty" || d.GetReason() != "fault: boom" || d.GetReasonKind() != "fault" {
		t.Fatalf("Down %v", d)
	}

	if err := c.Monitor(ctx, p.PID(), watcher); err != nil {
		t.Fatal(err)
	}
	if d := next(); d.GetPid() != uint64(p.PID()) || d.GetReason() != "noproc" {
		t.Fatalf("Down of a dead process: %v", d)
	}

	q := spawn(t, k, blocker, kernel.SpawnOptions{})
	if err := c.Monitor(ctx, q.PID(), watcher); err != nil {
		t.Fatal(err)
	}
	if err := c.Demonitor(ctx, q.PID(), watcher); err != nil {
		t.Fatal(err)
	}
	r := spawn(t, k, blocker, kernel.SpawnOptions{})
	if err := c.Monitor(ctx, r.PID(), watcher); err != nil {
		t.Fatal(err)
	}
	if err := k.Kill(q.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	if err := k.Kill(r.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	// The kernel actor handles q's note before r's (q ended first): the
	// first Down after the kills MUST be r's, so none came for q.
	if d := next(); d.GetPid() != uint64(r.PID()) || d.GetReason() != "killed: test" {
		t.Fatalf("after Demonitor of %v: Down %v", q.PID(), d)
	}
	if err := c.Monitor(ctx, 1, nil); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("monitor without a watcher: %v", err)
	}
}

// TestKernelActorChargeRefund: charges by message are all-or-nothing; a
// refusal comes back as a *capability.QuotaError and ends the process with
// reason quota:<meter>; a refund gives back room.
func TestKernelActorChargeRefund(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(t, k)
	ctx := tctx(t)
	p := spawn(t, k, blocker, kernel.SpawnOptions{Quota: capability.Limits{capability.LLMTokens: 100}})

	if err := c.Charge(ctx, p.PID(), capability.LLMTokens, 80); err != nil {
		t.Fatal(err)
	}
	if err := c.Refund(ctx, p.PID(), capability.LLMTokens, 30); err != nil {
		t.Fatal(err)
	}
	if used := p.Account().Used(capability.LLMTokens); used != 50 {
		t.Fatalf("used %g after charge 80, refund 30", used)
	}
	if err := c.Charge(ctx, p.PID(), capability.LLMTokens, -1); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("a negative charge: %v", err)
	}
	if err := c.Refund(ctx, p.PID(), "", 1); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("a refund without a meter: %v", err)
	}
	err := c.Charge(ctx, p.PID(), capability.LLMTokens, 60)
	var qe *capability.QuotaError
	if !errors.As(err, &qe) || qe.Meter != capability.LLMTokens || qe.Limit != 100 || qe.Used != 50 || qe.Want != 60 || !strings.Contains(err.Error(), "quota:llm_tokens") {
		t.Fatalf("over quota: %v (%+v)", err, qe)
	}
	if r := wait(t, p); r.String() != "quota:llm_tokens" {
		t.Fatalf("reason %v", r)
	}
	if used := k.Account().Used(capability.LLMTokens); used != 50 {
		t.Fatalf("the root account has %g, want the 50 spent (the refused 60 is all-or-nothing)", used)
	}
	if err := c.Charge(ctx, p.PID(), capability.LLMTokens, 1); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("charge of a dead process: %v", err)
	}
	if err := c.Refund(ctx, p.PID(), capability.LLMTokens, 1); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("refund of a dead process: %v", err)
	}
}

// TestKernelActorRefused: an executor's refused check becomes the kernel's
// "refused" event, named after the process.
func TestKernelActorRefused(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, _ := startKernelActor(t, k)
	ctx := tctx(t)
	p := spawn(t, k, blocker, kernel.SpawnOptions{Name: "agent"})
	c.Refused(p.PID(), capability.Exec, "tools/rm.ts", errors.New("no exec grant"))
	c.Refused(999, capability.Read, "tools/x.ts", errors.New("gone"))
	if _, err := c.PS(ctx); err != nil { // handled in order: both notes are in
		t.Fatal(err)
	}
	var refused []kernel.Event
	for _, e := range k.Events(0, 0) {
		if e.Kind == kernel.EventRefused {
			refused = append(refused, e)
		}
	}
	if len(refused) != 2 || refused[0].PID != p.PID() || refused[0].Name != "agent" ||
		refused[0].Detail != `exec on "tools/rm.ts": no exec grant` || refused[1].PID != 999 || !strings.Contains(refused[1].Detail, "gone") {
		t.Fatalf("refused events %+v", refused)
	}
}

// TestKernelActorSpawnFromAStoppedParent: a Spawn on behalf of a stopped
// parent waits for the parent's Continue, and the kernel actor keeps
// answering meanwhile (the cont is one of its messages: blocking on the
// parent would deadlock the endpoint).
func TestKernelActorSpawnFromAStoppedParent(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, sys := startKernelActor(t, k)
	ctx := tctx(t)
	if err := k.RegisterImage("idle", blocker); err != nil {
		t.Fatal(err)
	}
	parent := spawn(t, k, blocker, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}}})
	if err := c.Signal(ctx, parent.PID(), "stop", ""); err != nil {
		t.Fatal(err)
	}
	// The Spawn is in the kernel actor's mailbox before the PS below (one
	// goroutine enqueues both), so the PS is answered only if the waiting
	// spawn does not hold the actor.
	f := sys.Root().RequestFuture(c.PID, &system.Local{Msg: &kernelpb.Spawn{Image: "idle", Parent: uint64(parent.PID())}}, 10*time.Second)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ps, err := c.PS(pctx)
	if err != nil {
		t.Fatalf("the kernel actor stopped answering while a spawn waits for a stopped parent: %v", err)
	}
	if len(ps) != 1 {
		t.Fatalf("a stopped parent spawned: %+v", ps)
	}
	if err := c.Signal(ctx, parent.PID(), "cont", ""); err != nil {
		t.Fatal(err)
	}
	res, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	sp := res.(*kernelpb.Spawned)
	if sp.GetFailure() != nil {
		t.Fatal(sp.GetFailure())
	}
	r := struct{ pid kernel.PID }{kernel.PID(sp.GetPid())}
	if child := k.Process(r.pid); child == nil || child.Parent() != parent.PID() {
		t.Fatalf("child %v of %v", r.pid, parent.PID())
	}
}

// TestKernelActorMonitorBySender: a Monitor naming no watcher, sent with
// Request from an actor, makes that actor (the sender) the watcher.
func TestKernelActorMonitorBySender(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	c, sys := startKernelActor(t, k)
	ctx := tctx(t)
	got := make(chan any, 4)
	watcher := sys.Spawn(actor.PropsFromFunc(func(ac actor.Context) {
		switch m := ac.Message().(type) {
		case *kernelpb.Monitor:
			ac.Request(c.PID, &system.Local{Msg: m}) // the sender is this actor
		case *kernelpb.Monitored, *kernelpb.Down:
			got <- m
		}
	}))
	p := spawn(t, k, blocker, kernel.SpawnOptions{})
	sys.Root().Send(watcher, &kernelpb.Monitor{Pid: uint64(p.PID())})
	select {
	case m := <-got:
		if mon, ok := m.(*kernelpb.Monitored); !ok || mon.GetFailure() != nil {
			t.Fatalf("first answer %v, want Monitored", m)
		}
	case <-ctx.Done():
		t.Fatal("no Monitored")
	}
	if err := k.Kill(p.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if d, ok := m.(*kernelpb.Down); !ok || d.GetPid() != uint64(p.PID()) || d.GetReasonKind() != "killed" {
			t.Fatalf("then %v, want a Down of %v", m, p.PID())
		}
	case <-ctx.Done():
		t.Fatal("no Down to the sender")
	}
}
