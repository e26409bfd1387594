package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
)

func toolCall(id, name, args string) llmtest.Step {
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

// An agent reuses a tool it finds: search, run, answer; each call goes
// through the kernel under its own process.
func TestAgentReusesATool(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{
		toolCall("c1", "search_tools", `{"query":"fibonacci number"}`),
		func() llmtest.Step {
			s := toolCall("c2", "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":20}}`)
			s.Check = func(r llmtest.Received) error {
				if last := r.Messages[len(r.Messages)-1]; !strings.Contains(last.Content, "tools/math/fib.ts") {
					return fmt.Errorf("the search result was not sent back: %q", last.Content)
				}
				return nil
			}
			return s
		}(),
		{Content: "fib(20) is 6765"},
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	write(t, rt, samples.FibPath, samples.FibTool)
	res, err := rt.RunAgent(context.Background(), "What is the 20th Fibonacci number?", host.AgentOptions{Name: "asker"})
	if err != nil || srv.Err() != nil {
		t.Fatalf("%v %v", err, srv.Err())
	}
	if res.Reason != agent.ReasonAnswer || res.Answer != "fib(20) is 6765" || len(res.Calls) != 2 || res.Calls[1].Error != "" {
		t.Fatalf("result = %+v", res)
	}
	runs, _ := rt.Journal().Runs()
	kinds := map[string]int{}
	for _, r := range runs {
		kinds[r.Kind]++
	}
	if kinds["agent"] != 1 || kinds["exec"] != 1 {
		t.Fatalf("journaled runs by kind: %v", kinds)
	}
}

// The same call over and over ends the run with a clear reason; a refused
// call goes back to the model as an error.
func TestAgentStopsRepeating(t *testing.T) {
	same := toolCall("c", "read_file", `{"path":"agentos.json"}`)
	srv := llmtest.NewServer([]llmtest.Step{same, same, same, same})
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	res, err := rt.RunAgent(context.Background(), "read the config", host.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != agent.ReasonRepeated || res.Steps != 3 || !strings.Contains(res.Calls[0].Error, `lacks the "read" right`) {
		t.Fatalf("result = %+v", res)
	}
}

func TestAgentStepBudget(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{
		toolCall("a", "list_files", `{"dir":"tools"}`),
		toolCall("b", "search_tools", `{"query":"x"}`),
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	res, err := rt.RunAgent(context.Background(), "explore", host.AgentOptions{MaxSteps: 2})
	if err != nil || res.Reason != agent.ReasonBudget || res.Steps != 2 {
		t.Fatalf("%+v %v", res, err)
	}
}
