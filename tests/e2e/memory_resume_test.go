package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/memory"
)

// An unnamed agent with paging remembers a fact, pages big files out,
// crashes under its supervisor after its paged requests were journaled:
// the restarted incarnation (a new pid) resumes the run without diverging
// (its memory follows the run, so its pages keep their ids and the paging
// note its text) and recalls the fact it remembered before the crash. The
// run's memory is dropped when the run ends.
func TestUnnamedPagingAgentRestartResumes(t *testing.T) {
	root := t.TempDir()
	docs := filepath.Join(root, "tools", "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		var b strings.Builder
		for b.Len() < 8<<10 {
			fmt.Fprintf(&b, "Part %d line %d of the archive, nothing about the vault. ", i, b.Len())
		}
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("big-%d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := []llmtest.Step{
		toolCall("m", "remember", `{"text":"The vault code is 5-5-2-1."}`),
		toolCall("b0", "read_file", `{"path":"tools/docs/big-0.txt"}`),
		toolCall("b1", "read_file", `{"path":"tools/docs/big-1.txt"}`),
		toolCall("b2", "read_file", `{"path":"tools/docs/big-2.txt"}`),
		toolCall("b3", "read_file", `{"path":"tools/docs/big-3.txt"}`),
		// The crash is here, before request 6: requests 4 and 5 were paged.
		toolCall("r", "recall", `{"query":"vault code"}`),
		{Content: "The vault code is 5-5-2-1.", Check: func(r llmtest.Received) error {
			last := r.Messages[len(r.Messages)-1]
			if last.Role != llm.RoleTool || !strings.Contains(last.Content, "5-5-2-1") {
				return fmt.Errorf("recall after the restart did not find the fact remembered before it: %.300q", last.Content)
			}
			return nil
		}},
	}
	srv := llmtest.NewServer(script)
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess"})
	results := make(chan agent.Result, 1)
	errs := make(chan error, 4)
	main := agent.Main("Remember the vault code, read the archive, then tell me the vault code.", agent.MainOptions{
		Node: rt.Node(), Model: crashingModel(t, srv.URL(), 6, func(context.Context) { panic("the agent's process crashes before its model call 6") }), Journal: rt.Journal(), MaxSteps: 10,
		Memory: agent.MemorySettings{WindowTokens: 8192},
		Done: func(res agent.Result, err error) {
			if err == nil {
				results <- res
			} else {
				errs <- err
			}
		},
	})
	sup := kernel.Supervise(kernel.SupervisorSpec{
		Strategy: supervisor.OneForOne, Intensity: 3, Period: time.Minute,
		Children: []kernel.ChildSpec{{Name: "asker", Main: kernel.MainOf(main), Restart: supervisor.Transient,
			Options: kernel.SpawnOptions{Image: agent.Image, Grants: defaultGrants()}}},
	})
	sp, err := rt.Kernel().Spawn(sup, kernel.SpawnOptions{Image: "supervisor", Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Kernel().Kill(sp.PID(), "test over")
	var res agent.Result
	select {
	case res = <-results:
	case err := <-errs:
		t.Fatalf("an incarnation failed: %v (the model saw: %v)", err, srv.Err())
	case <-time.After(time.Minute):
		t.Fatalf("the restarted agent did not finish; the model received %d requests", srv.Requests())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests(); n != len(script) {
		t.Fatalf("the model received %d requests, want %d (none twice)", n, len(script))
	}
	if res.Paged == 0 || res.Reason != agent.ReasonAnswer {
		t.Fatalf("result: %+v", res)
	}
	agents, _ := agentRuns(t, rt.Journal())
	if len(agents) != 1 {
		t.Fatalf("agent runs: %+v", agents)
	}
	infos, err := rt.MemoryAgents()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range infos {
		if strings.HasPrefix(a.Name, "#") {
			t.Fatalf("the ended run's memory is still there: %+v", infos)
		}
	}
}

// Two live incarnations never write one agent run: a second process whose
// state names the run of a live agent (a snapshot taken without --kill and
// restored, or one snapshot restored twice) fails with agent.ErrRunHeld,
// and the first goes on and ends its run alone.
func TestAgentRunHeldByALiveIncarnation(t *testing.T) {
	srv := llmtest.NewServer(resumeScript())
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess"})
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	dev := client.Device()
	parked, resume := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	model := driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		if calls.Add(1) == 2 {
			close(parked)
			<-resume
		}
		return dev.Do(ctx, op, req)
	})
	firstDone := make(chan error, 1)
	p, err := rt.Kernel().Spawn(kernel.MainOf(agent.Main("What is the 20th Fibonacci number?", agent.MainOptions{
		Node: rt.Node(), Model: model, Journal: rt.Journal(), Done: func(_ agent.Result, err error) { firstDone <- err },
	})), kernel.SpawnOptions{Name: "asker", Image: agent.Image, Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	<-parked
	state := p.State() // what a snapshot of it holds: its run
	var st agent.State
	if err := json.Unmarshal(state, &st); err != nil || st.Run == "" {
		t.Fatalf("the agent's state: %s %v", state, err)
	}
	secondDone := make(chan error, 1)
	image := agent.ImageMain(agent.MainOptions{Node: rt.Node(), Model: model, Journal: rt.Journal(), Done: func(_ agent.Result, err error) { secondDone <- err }})
	q, err := rt.Kernel().Spawn(func(ctx context.Context, q *kernel.Process) error {
		if err := q.SetState(state); err != nil {
			return err
		}
		return image(ctx, q)
	}, kernel.SpawnOptions{Name: "asker-copy", Image: agent.Image, Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; !errors.Is(err, agent.ErrRunHeld) || !strings.Contains(err.Error(), st.Run) {
		t.Fatalf("the second incarnation of run %s: %v, want ErrRunHeld", st.Run, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = q.Wait(ctx)
	close(resume)
	if err := <-firstDone; err != nil {
		t.Fatalf("the first incarnation: %v", err)
	}
	meta, err := rt.Journal().Get(st.Run)
	if err != nil || meta.Status != journal.StatusOK {
		t.Fatalf("the run: %+v %v", meta, err)
	}
	if n := srv.Requests(); n != len(resumeScript()) {
		t.Fatalf("the model received %d requests, want %d", n, len(resumeScript()))
	}
}

// An agent restored under another name (agentos restore --name) keeps the
// memory of its first incarnation: its resumed lessons request is the
// recorded one (the agents it names), so the run resumes, and its memory
// tools still reach that memory.
func TestAgentRestoredUnderAnotherNameKeepsItsMemory(t *testing.T) {
	srv := llmtest.NewServer(resumeScript())
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	if _, _, err := rt.Remember("alice", memory.Item{Kind: memory.Lesson, Text: "The Fibonacci tool lives in tools/math."}); err != nil {
		t.Fatal(err)
	}
	atCrash := make(chan struct{})
	model := crashingModel(t, srv.URL(), 4, func(ctx context.Context) {
		close(atCrash)
		<-ctx.Done()
	})
	first := make(chan error, 1)
	_, err := rt.Kernel().Spawn(kernel.MainOf(agent.Main("What is the 20th Fibonacci number?", agent.MainOptions{
		Node: rt.Node(), Model: model, Journal: rt.Journal(), Memory: agent.MemorySettings{Lessons: 4},
		Done: func(_ agent.Result, err error) { first <- err },
	})), kernel.SpawnOptions{Name: "alice", Image: agent.Image, Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	<-atCrash
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := rt.Snapshot(ctx, "alice", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-first; !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("the killed incarnation: %v", err)
	}
	pid, err := rt.Restore(ctx, info.ID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	q := rt.Kernel().Process(pid)
	if q == nil {
		t.Fatal("the restored process is not alive")
	}
	if r, _ := q.Wait(ctx); r.Kind != kernel.Normal {
		t.Fatalf("the agent restored as bob ended with %v", r)
	}
	agents, _ := agentRuns(t, rt.Journal())
	if len(agents) != 1 || agents[0].Status != journal.StatusOK {
		t.Fatalf("agent runs: %+v", agents)
	}
	if n := srv.Requests(); n != 4 {
		t.Fatalf("the model received %d requests, want 4", n)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// A nursery agent (Runtime.Spawn) uses memory as RunAgent's do: its
// conversation is paged at memory.window_tokens and a named one is given
// its lessons.
func TestSpawnedAgentPagesAndRecallsLessons(t *testing.T) {
	root := t.TempDir()
	docs := filepath.Join(root, "tools", "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	script := []llmtest.Step{}
	for i := range 4 {
		var b strings.Builder
		for b.Len() < 8<<10 {
			fmt.Fprintf(&b, "Part %d line %d of the archive. ", i, b.Len())
		}
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("big-%d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		script = append(script, toolCall(fmt.Sprintf("b%d", i), "read_file", fmt.Sprintf(`{"path":"tools/docs/big-%d.txt"}`, i)))
	}
	script = append(script, llmtest.Step{Content: "read"})
	srv := llmtest.NewServer(script)
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"},
		Memory: host.MemoryConfig{WindowTokens: 8192},
		Agents: host.AgentsConfig{Templates: map[string]host.AgentTemplate{
			"reader": {Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.LLM}}, Tools: []string{"read_file"}},
		}}})
	if _, _, err := rt.Remember("alice", memory.Item{Kind: memory.Lesson, Text: "Read the archive parts in order."}); err != nil {
		t.Fatal(err)
	}
	res, err := rt.Spawn(context.Background(), "reader", "Read the archive parts in tools/docs.", host.SpawnOptions{Name: "alice"})
	if err != nil || srv.Err() != nil {
		t.Fatalf("%v; the model saw: %v", err, srv.Err())
	}
	if res.Paged == 0 {
		t.Fatalf("the spawned agent paged nothing: %+v", res)
	}
	if first := srv.Received()[0]; !strings.Contains(first.Messages[0].Content, "Read the archive parts in order.") {
		t.Fatalf("the spawned agent's system prompt lacks its lesson: %.300q", first.Messages[0].Content)
	}
	if _, err := rt.Spawn(context.Background(), "reader", "anything", host.SpawnOptions{Name: "#1"}); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("an agent named #1: %v, want a refusal", err)
	}
	if _, err := rt.RunAgent(context.Background(), "anything", host.AgentOptions{Name: "#1"}); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("an agent named #1: %v, want a refusal", err)
	}
}

// A process named like an unnamed process's memory ("#7") cannot use the
// memory tools: it would own that process's memory.
func TestProcessNamedLikeAnEphemeralMemoryIsRefused(t *testing.T) {
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess"})
	p, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil },
		kernel.SpawnOptions{Name: "#7", Grants: defaultGrants()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Kernel().Kill(p.PID(), "test over")
	for tool, args := range map[string]string{"remember": `{"text":"x"}`, "recall": `{"query":"x"}`, "forget": `{"id":"1"}`} {
		if _, err := rt.Node().Call(context.Background(), p, tool, json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Fatalf("%s by a process named #7: %v, want a refusal", tool, err)
		}
	}
}
