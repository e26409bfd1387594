package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/samples"
)

// The model-behaviour suite (issue 26): answers written the way real
// models and servers write them (OpenAI with parallel calls, vLLM's and
// llama.cpp's parsers, Ollama, Hermes/Qwen text calls, Llama 3.x JSON,
// Mistral [TOOL_CALLS], prose with fenced code, cut-off answers, calls
// without ids, a busy server), served over real HTTP by the scripted
// model, driving `agentos forge` and `agentos agent`. The scripted server
// refuses every request OpenAI's API would refuse for its tool calls (each
// call answered, ids present, roles in order): a case whose next request
// would be invalid fails here.

func withModel(t *testing.T, steps ...llmtest.Step) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(steps)
	t.Cleanup(srv.Close)
	t.Setenv("AGENTOS_LLM_BASE_URL", srv.URL())
	t.Setenv("AGENTOS_LLM_MODEL", "scripted")
	return srv
}

func fibArgs(code, tests string) string {
	b, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": code, "tests": tests})
	return string(b)
}

func submitStep(args string) llmtest.Step {
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "s1", Name: "submit_tool", Arguments: args}}}
}

func TestModelSuiteForge(t *testing.T) {
	good := fibArgs(samples.FibForged, samples.FibForgedTests)
	bad := fibArgs(samples.FibForgedBuggy, samples.FibForgedTests)
	cases := []struct {
		name     string
		steps    []llmtest.Step
		attempts int
	}{
		{"openai parallel submit_tool calls: the first is judged, the other answered", []llmtest.Step{
			{ToolCalls: []llm.ToolCall{{ID: "a", Name: "submit_tool", Arguments: bad}, {ID: "b", Name: "submit_tool", Arguments: good}}},
			submitStep(good)}, 2},
		{"hermes/qwen <tool_call> text", []llmtest.Step{
			{Content: "<tool_call>\n{\"name\": \"submit_tool\", \"arguments\": " + good + "}\n</tool_call>"}}, 1},
		{"mistral [TOOL_CALLS]", []llmtest.Step{
			{Content: "[TOOL_CALLS] [{\"name\": \"submit_tool\", \"arguments\": " + good + "}]"}}, 1},
		{"llama 3 JSON with parameters", []llmtest.Step{
			{Content: "{\"name\": \"submit_tool\", \"parameters\": " + good + "}"}}, 1},
		{"prose with a fenced JSON call", []llmtest.Step{
			{Content: "Here is the tool.\n```json\n{\"name\": \"submit_tool\", \"arguments\": " + good + "}\n```"}}, 1},
		{"fenced code inside the arguments", []llmtest.Step{
			submitStep(fibArgs("```typescript\n"+samples.FibForged+"```", "```ts\n"+samples.FibForgedTests+"\n```"))}, 1},
		{"calls without ids (some OpenAI-compatible servers)", []llmtest.Step{
			{NoIDs: true, ToolCalls: []llm.ToolCall{{Name: "submit_tool", Arguments: bad}}},
			{NoIDs: true, ToolCalls: []llm.ToolCall{{Name: "submit_tool", Arguments: good}}}}, 2},
		{"an answer cut off at max_tokens", []llmtest.Step{
			{FinishReason: "length", ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool", Arguments: good[:len(good)/3]}}},
			submitStep(good)}, 2},
		{"a busy server (503), asked again", []llmtest.Step{
			{Status: http.StatusServiceUnavailable, Error: "overloaded"}, submitStep(good)}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := withModel(t, c.steps...)
			root := toolRoot(t, nil)
			code, stdout, stderr := cli(t, "forge", "--root", root, "--json", "a tool that returns the n-th Fibonacci number")
			if err := srv.Err(); err != nil {
				t.Fatalf("a request OpenAI would refuse: %v", err)
			}
			var res struct {
				Path     string `json:"path"`
				Attempts []struct {
					Passed bool `json:"passed"`
				} `json:"attempts"`
			}
			if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.Path != "tools/math/fib.ts" || len(res.Attempts) != c.attempts {
				t.Fatalf("exit %d, want 0 after %d attempts\n%s\n%s", code, c.attempts, stdout, stderr)
			}
		})
	}
}

// A forge that gives up says so truthfully: exit 1, the run id and every
// attempt's errors under --json.
func TestModelSuiteForgeGivesUpTruthfully(t *testing.T) {
	bad := fibArgs(samples.FibForgedBuggy, samples.FibForgedTests)
	withModel(t, submitStep(bad), submitStep(bad), submitStep(bad))
	root := toolRoot(t, nil)
	code, stdout, stderr := cli(t, "forge", "--root", root, "--json", "a tool that returns the n-th Fibonacci number")
	out := stdout + stderr
	if code != 1 || !strings.Contains(out, "forge run ") || !strings.Contains(out, "attempt 1: tests failed") || !strings.Contains(out, "attempt 3: tests failed") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

func TestModelSuiteAgent(t *testing.T) {
	list := `{"path": "tools"}`
	cases := []struct {
		name  string
		steps []llmtest.Step
		calls int
	}{
		{"openai parallel calls, all answered", []llmtest.Step{
			{ToolCalls: []llm.ToolCall{call("a", "list_files", list), call("b", "list_files", `{"path": "personas"}`)}},
			{Content: "done"}}, 2},
		{"hermes/qwen <tool_call> text", []llmtest.Step{
			{Content: "<tool_call>\n{\"name\": \"list_files\", \"arguments\": " + list + "}\n</tool_call>"},
			{Content: "done"}}, 1},
		{"mistral v11 [TOOL_CALLS]name[ARGS]", []llmtest.Step{
			{Content: "[TOOL_CALLS]list_files[ARGS]" + list}, {Content: "done"}}, 1},
		{"llama 3 python_tag JSON", []llmtest.Step{
			{Content: "<|python_tag|>{\"name\": \"list_files\", \"parameters\": " + list + "}"}, {Content: "done"}}, 1},
		{"calls without ids", []llmtest.Step{
			{NoIDs: true, ToolCalls: []llm.ToolCall{{Name: "list_files", Arguments: list}, {Name: "list_files", Arguments: list}}},
			{Content: "done"}}, 2},
		{"arguments that are not JSON get a message a model acts on", []llmtest.Step{
			{ToolCalls: []llm.ToolCall{call("a", "list_files", `{"path": "tools"`)}},
			func() llmtest.Step {
				s := llmtest.Step{Content: "done"}
				s.Check = lastSays("not valid JSON", "send one JSON object")
				return s
			}()}, 1},
		{"a final answer cut off at max_tokens is asked again", []llmtest.Step{
			{Content: "The files are", FinishReason: "length"},
			func() llmtest.Step {
				s := llmtest.Step{Content: "done"}
				s.Check = lastSays("cut off at")
				return s
			}()}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := withModel(t, c.steps...)
			root := toolRoot(t, nil)
			code, stdout, stderr := cli(t, "agent", "--root", root, "--json", "list the tools")
			if err := srv.Err(); err != nil {
				t.Fatalf("a request OpenAI would refuse: %v", err)
			}
			var res agent.Result
			if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.Reason != agent.ReasonAnswer || len(res.Calls) != c.calls {
				t.Fatalf("exit %d, want 0 with %d calls\n%s\n%s", code, c.calls, stdout, stderr)
			}
		})
	}
}

// An agent that stops without an answer fails: exit 1 under --json too,
// with the reason in the result.
func TestModelSuiteAgentBudgetFails(t *testing.T) {
	loop := llmtest.Step{ToolCalls: []llm.ToolCall{call("a", "list_files", `{"path": "tools"}`)}}
	withModel(t, loop, loop)
	root := toolRoot(t, nil)
	code, stdout, stderr := cli(t, "agent", "--root", root, "--json", "--max-steps", "2", "list the tools")
	if code != 1 || !strings.Contains(stdout, `"reason": "step_budget"`) {
		t.Fatalf("exit %d, want 1 with reason step_budget\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "runs", "--root", root, "--json")
	if code != 0 || !strings.Contains(stdout, `"failed"`) {
		t.Fatalf("the journal does not mark the run failed: %s", stdout)
	}
}

func lastSays(want ...string) func(llmtest.Received) error {
	return func(r llmtest.Received) error {
		last := r.Messages[len(r.Messages)-1].Content
		for _, w := range want {
			if !strings.Contains(last, w) {
				return fmt.Errorf("the last message %q does not say %q", last, w)
			}
		}
		return nil
	}
}

func TestDoctorLLM(t *testing.T) {
	withModel(t,
		llmtest.Step{Content: "ok"},
		llmtest.Step{Content: "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>"},
		llmtest.Step{ToolCalls: []llm.ToolCall{call("x", "add", `{"a":1,"b":2}`), call("y", "add", `{"a":3,"b":4}`)}})
	root := toolRoot(t, nil)
	code, stdout, stderr := cli(t, "doctor", "--root", root, "llm")
	for _, want := range []string{"reachable:       yes", "tool calls:      hermes", "parallel calls:  2", "agentos reads them"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("exit %d, no %q in\n%s\n%s", code, want, stdout, stderr)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	// A model that calls no tool fails the check, saying what to change.
	withModel(t, llmtest.Step{Content: "ok"}, llmtest.Step{Content: "5"}, llmtest.Step{Content: "3 and 7"})
	code, stdout, _ = cli(t, "doctor", "--root", root, "--json", "llm")
	if code != 1 || !strings.Contains(stdout, `"tool_calls": "none"`) || !strings.Contains(stdout, "--enable-auto-tool-choice") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	// Nothing listening: a clear failure, not a hang.
	t.Setenv("AGENTOS_LLM_BASE_URL", "http://127.0.0.1:1/v1")
	code, stdout, _ = cli(t, "doctor", "--root", root, "llm")
	if code != 1 || !strings.Contains(stdout, "reachable:       no") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
}

func TestModelSuiteAgentRetriesABusyServer(t *testing.T) {
	srv := withModel(t, llmtest.Step{Status: http.StatusTooManyRequests, Error: "slow down", RetryAfter: 1}, llmtest.Step{Content: "done"})
	root := toolRoot(t, nil)
	code, stdout, stderr := cli(t, "agent", "--root", root, "--json", "say done")
	if code != 0 || srv.Requests() != 2 || !strings.Contains(stdout, `"answer": "done"`) {
		t.Fatalf("exit %d, %d requests\n%s\n%s", code, srv.Requests(), stdout, stderr)
	}
}
