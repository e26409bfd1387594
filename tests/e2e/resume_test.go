package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/journal"
)

// resumeScript: three model answers asking for tools (a search, a tool
// run, a listing), then the answer. The process crashes after the third.
func resumeScript() []llmtest.Step {
	return []llmtest.Step{
		toolCall("c1", "search_tools", `{"query":"fibonacci number"}`),
		toolCall("c2", "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":20}}`),
		toolCall("c3", "list_files", `{"dir":"tools"}`),
		{Content: "fib(20) is 6765"},
	}
}

// crashingModel is the scripted model's device, through real HTTP, that
// calls at before sending the n-th request it is given (a panic there is
// the agent's process crashing).
func crashingModel(t *testing.T, url string, n int32, at func(ctx context.Context)) driver.Device {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: url, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	dev := client.Device()
	var calls atomic.Int32
	return driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		if calls.Add(1) == n {
			at(ctx)
		}
		return dev.Do(ctx, op, req)
	})
}

func agentRuns(t *testing.T, j *journal.Journal) (agents []journal.RunMeta, execs int) {
	t.Helper()
	runs, err := j.Runs()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		switch r.Kind {
		case agent.Kind:
			agents = append(agents, r)
		case "exec":
			execs++
		}
	}
	return agents, execs
}

// checkResumed: the scripted model was asked each step once (4 requests
// in all), the tool run was not performed again, and the one agent run
// holds the 4 model calls and the 3 tool calls, in one sequence.
func checkResumed(t *testing.T, srv *llmtest.Server, j *journal.Journal, res agent.Result) {
	t.Helper()
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	if n := srv.Requests(); n != 4 {
		t.Fatalf("the scripted model received %d requests, want 4: the restart asked again for answers the journal had", n)
	}
	if res.Reason != agent.ReasonAnswer || res.Answer != "fib(20) is 6765" || res.Steps != 4 || len(res.Calls) != 3 || res.Calls[1].Error != "" {
		t.Fatalf("result = %+v", res)
	}
	agents, execs := agentRuns(t, j)
	if len(agents) != 1 || agents[0].Status != journal.StatusOK {
		t.Fatalf("agent runs: %+v", agents)
	}
	if execs != 1 {
		t.Fatalf("%d exec runs, want 1: the resumed agent ran its recorded exec_tool call again", execs)
	}
	entries, err := j.Entries(agents[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
		got = append(got, e.Driver+"."+e.Op)
	}
	want := "llm.complete kernel.search_tools llm.complete kernel.exec_tool llm.complete kernel.list_files llm.complete"
	if strings.Join(got, " ") != want {
		t.Fatalf("the run's entries: %s\nwant %s", strings.Join(got, " "), want)
	}
}

// A supervised agent crashes (a panic) after 3 model calls: its restart
// resumes the run from the journal and asks the scripted model for nothing
// it already answered, nor runs its tools again.
func TestSupervisedAgentRestartResumes(t *testing.T) {
	srv := llmtest.NewServer(resumeScript())
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess"})
	write(t, rt, samples.FibPath, samples.FibTool)

	var crashed atomic.Bool
	model := crashingModel(t, srv.URL(), 4, func(context.Context) {
		if crashed.CompareAndSwap(false, true) {
			panic("the agent's process crashes before its fourth model call")
		}
	})
	results := make(chan agent.Result, 1)
	main := agent.Main("What is the 20th Fibonacci number?", agent.MainOptions{
		Node: rt.Node(), Model: model, Journal: rt.Journal(),
		Done: func(res agent.Result, err error) {
			if err == nil {
				results <- res
			}
		},
	})
	var events []supervisor.Event
	var mu sync.Mutex
	sup := kernel.Supervise(kernel.SupervisorSpec{
		Strategy: supervisor.OneForOne, Intensity: 3, Period: time.Minute,
		OnEvent: func(e supervisor.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		Children: []kernel.ChildSpec{{Name: "asker", Main: kernel.MainOf(main), Restart: supervisor.Transient,
			Options: kernel.SpawnOptions{Name: "asker", Image: agent.Image, Grants: defaultGrants()}}},
	})
	sp, err := rt.Kernel().Spawn(sup, kernel.SpawnOptions{Name: "sup", Image: "supervisor", Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Kernel().Kill(sp.PID(), "test over")
	var res agent.Result
	select {
	case res = <-results:
	case <-time.After(time.Minute):
		t.Fatalf("the restarted agent did not finish; the model received %d requests", srv.Requests())
	}
	if !crashed.Load() {
		t.Fatal("the agent never crashed")
	}
	// The run ended before the child did: wait for the supervisor's
	// decision on its normal exit (a transient child is not restarted).
	testutil.Eventually(t, 10*time.Second, "the supervisor's decision on the normal exit", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) == 2
	})
	mu.Lock()
	var actions []string
	for _, e := range events {
		actions = append(actions, string(e.Action))
	}
	mu.Unlock()
	if strings.Join(actions, " ") != "restart stop" {
		t.Fatalf("supervisor decisions: %v, want one restart (the crash) then stop (the normal end)", actions)
	}
	checkResumed(t, srv, rt.Journal(), res)
}

func defaultGrants() []capability.Grant { return host.Config{}.DefaultGrants() }

// An agent that crashes at every incarnation exceeds the restart intensity:
// its supervisor ends with a fault, as for any child.
func TestAgentRestartIntensityEscalates(t *testing.T) {
	srv := llmtest.NewServer(resumeScript())
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess"})
	model := driver.DeviceFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		panic("always")
	})
	sup := kernel.Supervise(kernel.SupervisorSpec{
		Strategy: supervisor.OneForOne, Intensity: 2, Period: time.Minute,
		Children: []kernel.ChildSpec{{Name: "asker", Restart: supervisor.Permanent,
			Main:    kernel.MainOf(agent.Main("anything", agent.MainOptions{Node: rt.Node(), Model: model, Journal: rt.Journal()})),
			Options: kernel.SpawnOptions{Image: agent.Image, Grants: defaultGrants()}}},
	})
	sp, err := rt.Kernel().Spawn(sup, kernel.SpawnOptions{Image: "supervisor", Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := sp.Wait(ctx)
	if err != nil || r.Kind != kernel.Fault || !strings.Contains(r.Detail, "restarts within") {
		t.Fatalf("supervisor ended with %v %v, want a fault for the restart intensity", r, err)
	}
	if srv.Requests() != 0 {
		t.Fatalf("the model was asked %d times", srv.Requests())
	}
	agents, _ := agentRuns(t, rt.Journal())
	if len(agents) != 1 {
		t.Fatalf("%d agent runs, want 1: every incarnation resumes the same run", len(agents))
	}
}

// Snapshot an agent at its crash point with kill, then restore it: the
// restored process (the runtime's agent image) resumes its journaled run
// and the model is asked only for the answer it had not given.
func TestAgentSnapshotRestoreResumes(t *testing.T) {
	srv := llmtest.NewServer(resumeScript())
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	write(t, rt, samples.FibPath, samples.FibTool)
	atCrash := make(chan struct{})
	model := crashingModel(t, srv.URL(), 4, func(ctx context.Context) {
		close(atCrash)
		<-ctx.Done() // held until the snapshot kills the process
	})
	first := make(chan error, 1)
	p, err := rt.Kernel().Spawn(kernel.MainOf(agent.Main("What is the 20th Fibonacci number?", agent.MainOptions{
		Node: rt.Node(), Model: model, Journal: rt.Journal(), Done: func(_ agent.Result, err error) { first <- err },
	})), kernel.SpawnOptions{Name: "asker", Image: agent.Image, Grants: defaultGrants(), Quota: capability.Limits{capability.ToolCalls: 50}})
	if err != nil {
		t.Fatal(err)
	}
	<-atCrash
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := rt.Snapshot(ctx, "asker", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-first; !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("the killed incarnation ended with %v, want ErrInterrupted", err)
	}
	if r, _ := p.Reason(); r.Kind != kernel.Killed {
		t.Fatalf("after snapshot --kill: %v", r)
	}
	pid, err := rt.Restore(ctx, info.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	q := rt.Kernel().Process(pid)
	if q == nil {
		t.Fatal("the restored process is not alive")
	}
	if left, _ := q.Account().Left(capability.ToolCalls); left != 47 {
		t.Fatalf("tool_calls left after restore: %v, want 47 (3 tool calls before the snapshot)", left)
	}
	if r, _ := q.Wait(ctx); r.Kind != kernel.Normal {
		t.Fatalf("the restored agent ended with %v", r)
	}
	agents, _ := agentRuns(t, rt.Journal())
	if len(agents) != 1 {
		t.Fatalf("agent runs: %+v", agents)
	}
	var res agent.Result
	if err := json.Unmarshal(agents[0].Result, &res); err != nil {
		t.Fatal(err)
	}
	checkResumed(t, srv, rt.Journal(), res)
}
