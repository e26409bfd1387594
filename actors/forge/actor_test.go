package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// charges records what a forge charged, by pid.
type charges struct {
	mu  sync.Mutex
	got []string
	// onCharge, when set, runs on every charge (before it is recorded),
	// with the forge's context.
	onCharge func(ctx context.Context)
}

func (c *charges) Charge(ctx context.Context, pid uint64, m capability.Meter, amount float64) error {
	if c.onCharge != nil {
		c.onCharge(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, fmt.Sprintf("%d %s %g", pid, m, amount))
	return nil
}

// startForge spawns the forge actor of e and returns its client.
func startForge(t *testing.T, e env) *forge.Client {
	t.Helper()
	pid := e.sys.Root.Spawn(forge.Props(e.f))
	t.Cleanup(func() { _ = e.sys.Root.StopFuture(pid).Wait() })
	return forge.NewClient(e.sys.Root, pid)
}

// A forge asked through the actor for a process runs the candidate's tests
// through the executor actor with that process's token: model-written test
// code cannot read what the process may not. The model usage is charged
// to the process through the Charger.
func TestClientForgesForItsCaller(t *testing.T) {
	leakyTests := `const fib = require('./fib').default;
export default async function (): Promise<void> {
  if (fib({ n: 10 }) !== 55) { throw new Error("fib(10)"); }
  const cfg = await tgp.read_file("secrets.env");
  throw new Error("LEAK " + cfg);
}
`
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": fibCode, "tests": leakyTests})
	step := llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}, Usage: llm.Usage{PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42}}
	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	root := t.TempDir()
	auth, err := capability.NewAuthority(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := &charges{}
	e := newEnvWith(t, srv, root, envOptions{auth: auth, charger: ch, attempts: 1})
	if err := e.jl.WriteFile("secrets.env", []byte("API_KEY=sk-live-do-not-leak\n")); err != nil {
		t.Fatal(err)
	}
	c := startForge(t, e)
	grants := []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Write, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}
	caller := &execclient.Caller{PID: 7, Holder: "pid:7", Token: auth.Mint("pid:7", grants, capability.Caveats{})}
	res, err := c.Forge(context.Background(), "a tool that returns the n-th Fibonacci number", caller)
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	if err == nil || strings.Contains(err.Error(), "sk-live") || !strings.Contains(err.Error(), `lacks the "read" right on "secrets.env"`) {
		t.Fatalf("the forge's tests ran without the caller's rights: %+v %v", res, err)
	}
	if !errors.Is(err, forge.ErrGaveUp) || len(res.Attempts) != 1 || res.Attempts[0].Passed || res.Usage.TotalTokens != 42 {
		t.Fatalf("a forge that gave up, through the client: %+v %v", res, err)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if strings.Join(ch.got, ", ") != "7 llm_tokens 42, 7 cost_usd 0" {
		t.Fatalf("charges = %q, want the model answer's tokens and cost charged to pid 7", ch.got)
	}
}

// The forge's errors cross the wire as Failure codes: errors.Is works on
// what the client returns.
func TestClientErrors(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	e := newEnv(t, srv, t.TempDir())
	c := startForge(t, e)
	if _, err := c.Forge(context.Background(), "   ", nil); !errors.Is(err, forge.ErrSpec) || !strings.Contains(err.Error(), "the spec is empty") {
		t.Fatalf("empty spec: %v, want ErrSpec", err)
	}
	if _, err := c.Resume(context.Background(), "no-such-run", nil); err == nil {
		t.Fatal("resuming a run that does not exist succeeded")
	}
}

// Cancelling the client's context sends Cancel: the forge stops and its
// journal run stays unfinished, to be resumed.
func TestClientCancelLeavesForgeResumable(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{submit(fibCode), submit(fibCode), submit(fibCode)})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The caller's context is cancelled while the forge runs (after the
	// first model answer); the forge goes on until the Cancel message
	// reaches it.
	reached := make(chan struct{})
	var once sync.Once
	ch := &charges{onCharge: func(forgeCtx context.Context) { cancel(); <-forgeCtx.Done(); once.Do(func() { close(reached) }) }}
	auth := mustAuthority(t)
	e := newEnvWith(t, srv, t.TempDir(), envOptions{charger: ch, auth: auth})
	pid := e.sys.Root.Spawn(forge.Props(e.f))
	c := forge.NewClient(e.sys.Root, pid)
	caller := &execclient.Caller{PID: 3, Holder: "pid:3", Token: auth.Mint("pid:3", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{})}
	if _, err := c.Forge(ctx, "a tool that returns the n-th Fibonacci number", caller); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled forge: %v", err)
	}
	select { // the Cancel message, not the actor's stop, ends the forge
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the forge never saw the Cancel")
	}
	// Stopping the actor waits for its forges: the cancelled one is over.
	if err := e.sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 || runs[0].Kind != forge.Kind {
		t.Fatalf("unfinished runs after the cancel: %+v, want the forge (resumable)", runs)
	}
	if _, ok := e.reg.Get("tools/math/fib.ts"); ok {
		t.Fatal("a cancelled forge registered its tool")
	}
}

func mustAuthority(t *testing.T) *capability.Authority {
	t.Helper()
	a, err := capability.NewAuthority(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Every message of forge.proto can cross nodes: system.CheckRemote passes
// for each (iterating the file descriptor, so a message added to the .proto
// is checked too), and each is a request, a reply or a part listed here;
// a Done survives a wire round trip.
func TestMessagesCrossNodes(t *testing.T) {
	known := map[protoreflect.Name]bool{
		"Run": true, "Resume": true, "Cancel": true, "Done": true, // requests and the reply
		"Result": true, "Attempt": true, "Usage": true, "Failure": true, // parts
	}
	msgs := pb.File_actors_forge_forgepb_forge_proto.Messages()
	if msgs.Len() != len(known) {
		t.Errorf("forge.proto defines %d messages, this test lists %d", msgs.Len(), len(known))
	}
	for i := range msgs.Len() {
		d := msgs.Get(i)
		if !known[d.Name()] {
			t.Errorf("message %s is not listed as a request, reply or part of the protocol", d.Name())
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
		if err != nil {
			t.Fatal(err)
		}
		if err := system.CheckRemote(mt.New().Interface()); err != nil {
			t.Errorf("%s: %v", d.Name(), err)
		}
	}
	done := &pb.Done{Result: &pb.Result{Path: "tools/math/fib.ts", Attempts: []*pb.Attempt{{N: 1, Errors: []string{"tests failed"}}}, Usage: &pb.Usage{TotalTokens: 42, CostUsd: 0.01}},
		Failure: &pb.Failure{Code: "gave_up", Message: "forge: no attempt passed"}}
	b, err := proto.Marshal(done)
	if err != nil {
		t.Fatal(err)
	}
	var back pb.Done
	if err := proto.Unmarshal(b, &back); err != nil || !proto.Equal(done, &back) {
		t.Fatalf("Done round trip: %v", err)
	}
}
