package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// modelCrashingAt is the scripted model's device that panics instead of
// sending the first incarnation's n-th request.
func modelCrashingAt(t *testing.T, url string, n int32) driver.Device {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: url, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	dev := client.Device()
	var calls atomic.Int32
	return driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		if calls.Add(1) == n {
			panic(fmt.Sprintf("the agent's process crashes before its model call %d", n))
		}
		return dev.Do(ctx, op, req)
	})
}

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
	rt := start(t, agentos.Config{Root: root, Isolation: "inprocess"})
	results := make(chan agent.Result, 1)
	errs := make(chan error, 4)
	main := agent.Main("Remember the vault code, read the archive, then tell me the vault code.", agent.MainOptions{
		Node: rt.Node(), Model: modelCrashingAt(t, srv.URL(), 6), Journal: rt.Journal(), MaxSteps: 10,
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
		Children: []kernel.ChildSpec{{Name: "asker", Main: main, Restart: supervisor.Transient,
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
