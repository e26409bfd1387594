package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/etcdtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// logSignal is a slog.Handler that drops every record and closes seen at
// the first whose message is msg: a moment a test waits on.
type logSignal struct {
	msg  string
	seen chan struct{}
	once *sync.Once
}

func newLogSignal(msg string) logSignal {
	return logSignal{msg: msg, seen: make(chan struct{}), once: new(sync.Once)}
}

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logSignal) WithGroup(string) slog.Handler            { return h }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// Two nodes asking for the same tool at the same moment cause one forge
// (one activation of the spec's grain in the whole cluster): the scripted
// model is asked once and both callers get the same tool. The third node,
// which asked nothing, runs the tool at once: it learned of the commit
// through the cluster.
func TestClusterOneForgePerSpec(t *testing.T) {
	step := forgeCrashSubmit(forgeCrashFib)
	asked, release := make(chan struct{}), make(chan struct{})
	step.Check = func(llmtest.Received) error { close(asked); <-release; return nil }
	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	joined := newLogSignal(forge.JoinedLog)
	rts := testCluster(t, 3, upstream(t), srv.URL(), func(c *host.Config) { c.Logger = slog.New(joined) })

	const spec = "a tool that returns the n-th Fibonacci number"
	type answer struct {
		res forge.Result
		err error
	}
	answers := make(chan answer, 2)
	go func() { r, err := forgeOn(rts[0], spec); answers <- answer{r, err} }()
	<-asked // node 1's forge waits on the model
	go func() { r, err := forgeOn(rts[1], spec); answers <- answer{r, err} }()
	select { // node 2's request reaches the grain, which holds node 1's forge (a second forge would ask the model again, and fail)
	case <-joined.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("node 2's request never joined the forge in flight")
	}
	close(release)
	a, b := <-answers, <-answers
	if a.err != nil || b.err != nil {
		t.Fatalf("forges: %v / %v", a.err, b.err)
	}
	if a.res.Path != "tools/math/fib.ts" || a.res.Path != b.res.Path || a.res.RunID != b.res.RunID || a.res.Commit == "" {
		t.Fatalf("the two callers got different forges: %+v / %+v", a.res, b.res)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("the model was asked %d times for one spec across the cluster, want 1", n)
	}
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	// The forge worked for node 1's process, wherever its grain ran: the
	// model's tokens are charged to it, on node 1; node 2's caller, who
	// joined, is charged nothing.
	if used := rts[0].Agent().Account().Used(capability.LLMTokens); used <= 0 || used != float64(a.res.Usage.TotalTokens) {
		t.Fatalf("node 1's caller was charged %g llm_tokens, want the forge's %d", used, a.res.Usage.TotalTokens)
	}
	if used := rts[1].Agent().Account().Used(capability.LLMTokens); used != 0 {
		t.Fatalf("node 2's caller, who joined the forge, was charged %g llm_tokens", used)
	}
	for i, rt := range rts {
		out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`))
		if err != nil || !strings.Contains(string(out), `"result":55`) {
			t.Fatalf("node %d runs the forged tool: %s %v", i+1, out, err)
		}
	}
}

// A node that leaves in the middle of a forge loses nothing: the forge's
// grain re-activates on a node still in the cluster, which resumes the
// forge from the journal the nodes share (PostgreSQL) without asking the
// model again for the answer it had journaled.
func TestClusterForgeResumesOnAnotherNode(t *testing.T) {
	t.Setenv("TEST_CLUSTER_JOURNAL", startPostgres(t))
	const spec = "a tool that returns the n-th Fibonacci number"
	asked1, asked2, release2 := make(chan struct{}), make(chan struct{}), make(chan struct{})
	first := forgeCrashSubmit(forgeCrashBuggy) // its tests fail: the errors go back to the model
	first.Check = func(llmtest.Received) error { close(asked1); return nil }
	second := forgeCrashSubmit(forgeCrashFib)
	second.Check = func(llmtest.Received) error { close(asked2); <-release2; return nil }
	srv := llmtest.NewServer([]llmtest.Step{first, second, forgeCrashSubmit(forgeCrashFib)})
	defer srv.Close()
	rts := testCluster(t, 3, upstream(t), srv.URL(), func(c *host.Config) {
		c.JournalPostgresDSNEnv = "TEST_CLUSTER_JOURNAL"
		c.LLM.ForgeAttempts = 3
	})
	type answer struct {
		res forge.Result
		err error
	}
	answers := make(chan answer, 1)
	go func() { r, err := forgeOn(rts[0], spec); answers <- answer{r, err} }()
	<-asked1
	<-asked2 // the first answer is journaled, its tests failed, the forge asks again
	holder := -1
	for i, rt := range rts {
		for _, a := range rt.Member().Status().Activations {
			if a.Kind == forge.GrainKind && a.Identity == forge.SpecHash(spec) {
				holder = i
			}
		}
	}
	if holder < 0 {
		t.Fatal("no node holds the forge's grain")
	}
	if err := rts[holder].Close(); err != nil { // the forge is cancelled there, its claim let go
		t.Fatal(err)
	}
	close(release2)
	var got answer
	if holder == 0 { // the caller left with the forge: ask again from another node
		<-answers
		r, err := forgeOn(rts[1], spec)
		got = answer{r, err}
	} else {
		got = <-answers
	}
	if got.err != nil || got.res.Path != "tools/math/fib.ts" || len(got.res.Attempts) != 2 || got.res.Attempts[0].Passed || !got.res.Attempts[1].Passed {
		t.Fatalf("resumed forge (node %d left): %+v %v", holder+1, got.res, got.err)
	}
	// Three requests: the first (journaled) once, the second twice (its
	// answer was lost with the node that asked), never the first again.
	recv := srv.Received()
	if len(recv) != 3 {
		t.Fatalf("the model received %d requests, want 3", len(recv))
	}
	for i, r := range recv[1:] {
		if len(r.Messages) == len(recv[0].Messages) {
			t.Fatalf("request %d repeats the first request, whose answer was journaled", i+2)
		}
	}
	for i, rt := range rts {
		if i == holder {
			continue
		}
		out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`))
		if err != nil || !strings.Contains(string(out), `"result":55`) {
			t.Fatalf("node %d runs the forged tool: %s %v", i+1, out, err)
		}
	}
}

// 'agentos cluster status', 'ps --cluster' and 'events --cluster' through
// one node's admin socket show every member: its address, root and kinds,
// the forge grains it holds, its processes and its events (the kernel
// actors of the other nodes answer over the cluster).
func TestClusterStatusPSEvents(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{forgeCrashSubmit(forgeCrashFib)})
	defer srv.Close()
	rts := testCluster(t, 3, upstream(t), srv.URL())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rts[0].Serve(ctx) }()
	defer func() { cancel(); <-served }()
	const spec = "a tool that returns the n-th Fibonacci number"
	if _, err := forgeOn(rts[1], spec); err != nil {
		t.Fatal(err)
	}
	var c *admin.Client
	testutil.Eventually(t, 10*time.Second, "the node socket", func() bool {
		var err error
		c, err = admin.Dial(rts[0].Root())
		return err == nil
	})
	defer c.Close()

	var rep host.ClusterReport
	if err := c.Cluster(context.Background(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Members) != 3 || rep.Self != rts[0].Member().Address() {
		t.Fatalf("cluster status: %+v", rep)
	}
	roots, holders := map[string]bool{}, 0
	for _, m := range rep.Members {
		roots[m.Root] = true
		if m.Error != "" || m.PID == "" || !slices.Contains(m.Kinds, forge.GrainKind) {
			t.Fatalf("member %+v", m)
		}
		if slices.Contains(m.Forges, forge.SpecHash(spec)) {
			holders++
		}
	}
	if len(roots) != 3 || !roots[rts[2].Root()] || holders != 1 {
		t.Fatalf("cluster status: roots %v, %d holders of the spec's grain (want 1): %+v", roots, holders, rep)
	}

	ps, err := c.ClusterPS(context.Background())
	if err != nil || len(ps) != 3 {
		t.Fatalf("ps --cluster: %+v %v", ps, err)
	}
	for _, r := range ps {
		var procs []kernel.ProcInfo
		if r.Error != "" || json.Unmarshal(r.Result, &procs) != nil || !slices.ContainsFunc(procs, func(p kernel.ProcInfo) bool { return p.Name == "agent" }) {
			t.Fatalf("ps of %s: %s %s", r.Node, r.Result, r.Error)
		}
	}
	evs, err := c.ClusterEvents(context.Background(), 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("events --cluster: %+v %v", evs, err)
	}
	for _, r := range evs {
		var es []kernel.Event
		if r.Error != "" || json.Unmarshal(r.Result, &es) != nil || len(es) == 0 {
			t.Fatalf("events of %s: %s %s", r.Node, r.Result, r.Error)
		}
	}
}

// exec_tool may run on another node (placement): the tool's content hash
// travels with the run, the run executes in that node's sandbox (it reads
// that node's files) and its result and journal run come back as if it ran
// here; a node holding another version of the tool refuses, and the run
// comes back to this node.
func TestClusterExecPlacement(t *testing.T) {
	t.Setenv("TEST_CLUSTER_JOURNAL", startPostgres(t))
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	rts := testCluster(t, 2, upstream(t), srv.URL(), func(c *host.Config) {
		c.JournalPostgresDSNEnv = "TEST_CLUSTER_JOURNAL"
		c.WriteDirs = []string{"data"}
	})
	for i, rt := range rts { // a file each node has its own version of
		if err := os.MkdirAll(filepath.Join(rt.Root(), "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rt.Root(), "data", "where.txt"), []byte(fmt.Sprintf("node%d", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const tool = `/** Says which node's files it reads. */
export default async function (): Promise<string> {
  return await tgp.read_file("data/where.txt");
}
`
	args, _ := json.Marshal(map[string]string{"path": "tools/where.ts", "content": tool})
	if _, err := rts[0].Call(context.Background(), "write_file", args); err != nil {
		t.Fatal(err)
	}
	exec := func(placement string) (string, string, error) {
		out, err := rts[0].Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/where.ts","placement":"`+placement+`"}`))
		var res struct {
			Success bool   `json:"success"`
			Result  string `json:"result"`
			RunID   string `json:"run_id"`
		}
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		if err == nil && !res.Success {
			err = fmt.Errorf("the run failed: %s", out)
		}
		return res.Result, res.RunID, err
	}
	testutil.Eventually(t, 10*time.Second, "node 2 pulls the tool", func() bool {
		_, err := os.Stat(filepath.Join(rts[1].Root(), "tools", "where.ts"))
		return err == nil
	})
	other := rts[1].Member().Address()
	got, run, err := exec(other)
	if err != nil || got != "node2" {
		t.Fatalf("placed on node 2: %q %v", got, err)
	}
	if m, err := rts[0].Journal().Get(run); err != nil || m.Status != "ok" {
		t.Fatalf("the remote run %s in the shared journal, read from node 1: %+v %v", run, m, err)
	}
	if got, _, err := exec("local"); err != nil || got != "node1" {
		t.Fatalf("placed here: %q %v", got, err)
	}
	// Node 1's version changes without a commit: node 2 holds another
	// version and refuses; the run comes back to node 1.
	if err := os.WriteFile(filepath.Join(rts[0].Root(), "tools", "where.ts"), []byte(strings.Replace(tool, "which node's", "whose", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := exec(other); err != nil || got != "node1" {
		t.Fatalf("a stale version on node 2: %q %v, want the run back on node 1", got, err)
	}
	if _, _, err := exec("127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("a placement naming no member: %v", err)
	}
}

// A tool this node was never told of (written to the upstream by a writer
// outside the cluster, or whose announcement was lost) is pulled when a
// call asks for it, instead of answering that it does not exist.
func TestClusterPullsWhatWasNotAnnounced(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	bare := upstream(t)
	rts := testCluster(t, 2, bare, srv.URL())
	outsider, _ := gitRoot(t, bare) // not in the cluster: its commits are announced to no one
	args, _ := json.Marshal(map[string]string{"path": "tools/outside.ts", "content": "/** Says hi. */\nexport default function (): string { return \"hi\"; }\n"})
	if _, err := outsider.Call(context.Background(), "write_file", args); err != nil {
		t.Fatal(err)
	}
	out, err := rts[1].Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/outside.ts"}`))
	if err != nil || !strings.Contains(string(out), `"result":"hi"`) {
		t.Fatalf("exec_tool of a tool written outside the cluster: %s %v", out, err)
	}
	out, err = rts[0].Call(context.Background(), "read_file", json.RawMessage(`{"path":"tools/outside.ts"}`))
	if err != nil || !strings.Contains(string(out), "Says hi") {
		t.Fatalf("read_file of a tool written outside the cluster: %s %v", out, err)
	}
}

// A trace crosses nodes: the span of exec_tool on one node and the span of
// the run placed on another node are one trace (the span context travels
// in the message headers).
func TestClusterTraceCrossesNodes(t *testing.T) {
	t.Setenv("TEST_CLUSTER_JOURNAL", startPostgres(t))
	srv := llmtest.NewServer([]llmtest.Step{forgeCrashSubmit(forgeCrashFib)})
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	rts := testCluster(t, 2, upstream(t), srv.URL(), func(c *host.Config) {
		c.TracerProvider = tp
		c.JournalPostgresDSNEnv = "TEST_CLUSTER_JOURNAL"
	})
	const spec = "a tool that returns the n-th Fibonacci number"
	if _, err := forgeOn(rts[0], spec); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "node 2 pulls the tool", func() bool {
		_, err := os.Stat(filepath.Join(rts[1].Root(), "tools", "math", "fib.ts"))
		return err == nil
	})
	rec.Reset()
	out, err := rts[0].Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10},"placement":"`+rts[1].Member().Address()+`"}`))
	if err != nil || !strings.Contains(string(out), `"result":55`) {
		t.Fatalf("exec_tool placed on node 2: %s %v", out, err)
	}
	var call, run sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "agentos.kernel.exec_tool":
			call = s
		case "execute_tool tools/math/fib.ts":
			run = s
		}
	}
	if call == nil || run == nil {
		t.Fatalf("spans: kernel exec_tool %v, the run %v", call != nil, run != nil)
	}
	if run.SpanContext().TraceID() != call.SpanContext().TraceID() || !run.Parent().IsRemote() || run.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Fatalf("the run on node 2 (trace %s, parent %s remote %v) is not a child of node 1's exec_tool (trace %s, span %s)",
			run.SpanContext().TraceID(), run.Parent().SpanID(), run.Parent().IsRemote(), call.SpanContext().TraceID(), call.SpanContext().SpanID())
	}
}

// A token minted on one node verifies on every node (one signing key), and
// its revocation there (the process exits) reaches the others: they refuse
// it from then on.
func TestClusterRevocationReachesEveryNode(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	rts := testCluster(t, 3, upstream(t), srv.URL())
	p, err := rts[0].Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Name: "short-lived", Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}})
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := p.Token()
	if !ok {
		t.Fatal("no token")
	}
	for i, rt := range rts {
		if err := rt.Kernel().Authority().Verify(tok); err != nil {
			t.Fatalf("node %d refuses a token node 1 minted: %v", i+1, err)
		}
	}
	if err := rts[0].Kernel().Kill(p.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	for i, rt := range rts {
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("node %d refuses the revoked token", i+1), func() bool {
			return errors.Is(rt.Kernel().Authority().Verify(tok), capability.ErrRevoked)
		})
	}
}

// Membership through etcd (the production provider), from agentos.json's
// cluster section: the nodes find each other and share one forge per spec.
func TestClusterThroughEtcd(t *testing.T) {
	endpoint := etcdtest.Start(t)
	srv := llmtest.NewServer([]llmtest.Step{forgeCrashSubmit(forgeCrashFib)})
	defer srv.Close()
	rts := testCluster(t, 2, upstream(t), srv.URL(), func(c *host.Config) {
		c.Cluster.Provider, c.Cluster.Seeds, c.Cluster.HealthPort = "etcd", nil, 0
		c.Cluster.Etcd = host.EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/" + t.Name()}
	})
	const spec = "a tool that returns the n-th Fibonacci number"
	a, err := forgeOn(rts[0], spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := forgeOn(rts[1], spec)
	if err != nil || b.Path != a.Path || srv.Requests() != 1 {
		t.Fatalf("second node: %+v %v; model asked %d times", b, err, srv.Requests())
	}
}

// After etcd was out past the members' lease, the nodes see each other
// again by themselves, and a forge asked on both nodes is placed on one
// and shared (with protoactor's etcd provider every node saw 0 members
// for good, and a forge hung).
func TestClusterHealsAfterEtcdOutage(t *testing.T) {
	etcd := etcdtest.New(t)
	srv := llmtest.NewServer([]llmtest.Step{forgeCrashSubmit(forgeCrashFib)})
	defer srv.Close()
	rts := testCluster(t, 2, upstream(t), srv.URL(), func(c *host.Config) {
		c.Cluster.Provider, c.Cluster.Seeds, c.Cluster.HealthPort = "etcd", nil, 0
		c.Cluster.Etcd = host.EtcdConfig{Endpoints: []string{etcd.URL}, Prefix: "/" + t.Name()}
	})
	etcd.Pause(t)
	time.Sleep(7 * time.Second) // past the 3 s lease: every registration expires
	etcd.Resume(t)
	for i, rt := range rts {
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("node %d sees both nodes again", i+1), func() bool {
			return len(rt.Member().Status().Alive()) == 2
		})
	}
	const spec = "a tool that returns the n-th Fibonacci number"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type res struct {
		r   forge.Result
		err error
	}
	done := make(chan res, 2)
	for _, rt := range rts {
		go func() { r, err := forgeOn(rt, spec); done <- res{r, err} }()
	}
	var got []forge.Result
	for range rts {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			got = append(got, r.r)
		case <-ctx.Done():
			t.Fatal("a forge did not end within 60 s after etcd came back")
		}
	}
	if got[0].Path != got[1].Path || srv.Requests() != 1 {
		t.Fatalf("the two nodes got %+v and %+v; model asked %d times (want one forge, shared)", got[0], got[1], srv.Requests())
	}
}
