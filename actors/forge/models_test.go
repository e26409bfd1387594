package forge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// The forge against what real models and servers send (issue 26): each
// case is served over real HTTP by the scripted server, which refuses (as
// OpenAI does) a request whose tool calls are not all answered.

func submitArgs(code, tests string) string {
	b, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": code, "tests": tests})
	return string(b)
}

func lastContent(r llmtest.Received) string { return r.Messages[len(r.Messages)-1].Content }

// expectLast makes step check that the request's last message holds want.
func expectLast(step llmtest.Step, want string) llmtest.Step {
	step.Check = func(r llmtest.Received) error {
		if !strings.Contains(lastContent(r), want) {
			return fmt.Errorf("last message %q does not say %q", lastContent(r), want)
		}
		return nil
	}
	return step
}

func forgeWith(t *testing.T, steps ...llmtest.Step) (*llmtest.Server, error, int) {
	t.Helper()
	srv := llmtest.NewServer(steps)
	t.Cleanup(srv.Close)
	e := newEnv(t, srv, t.TempDir())
	res, err := e.f.Forge(context.Background(), fibSpec, nil)
	if srv.Err() != nil {
		t.Fatalf("the forge sent a request OpenAI would refuse, or a Check failed: %v", srv.Err())
	}
	return srv, err, len(res.Attempts)
}

func TestForgeParallelCallsAreAllAnswered(t *testing.T) {
	two := llmtest.Step{ToolCalls: []llm.ToolCall{
		{ID: "a", Name: "submit_tool", Arguments: submitArgs(buggyCode, fibTests)},
		{ID: "b", Name: "submit_tool", Arguments: submitArgs(fibCode, fibTests)},
	}}
	_, err, n := forgeWith(t, two, expectLast(submit(fibCode), "only the first submit_tool call"))
	if err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeJudgesSubmitToolAmongOtherCalls(t *testing.T) {
	mixed := llmtest.Step{ToolCalls: []llm.ToolCall{
		{ID: "t", Name: "think", Arguments: `{"thought":"fib"}`},
		{ID: "s", Name: "submit_tool", Arguments: submitArgs(fibCode, fibTests)},
	}}
	if _, err, n := forgeWith(t, mixed); err != nil || n != 1 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeReadsHermesTextCall(t *testing.T) {
	text := llmtest.Step{Content: "<tool_call>\n{\"name\": \"submit_tool\", \"arguments\": " + submitArgs(fibCode, fibTests) + "}\n</tool_call>"}
	if _, err, n := forgeWith(t, text); err != nil || n != 1 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeStripsOneCodeFence(t *testing.T) {
	fenced := llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool",
		Arguments: submitArgs("```typescript\n"+fibCode+"\n```", "```ts\n"+fibTests+"```")}}}
	if _, err, n := forgeWith(t, fenced); err != nil || n != 1 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeToolCallsWithoutIDs(t *testing.T) {
	bad := submit(buggyCode)
	bad.ToolCalls[0].ID, bad.NoIDs = "", true
	if _, err, n := forgeWith(t, bad, submit(fibCode)); err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeSaysAnAnswerWasCutOff(t *testing.T) {
	args := submitArgs(fibCode, fibTests)
	cut := llmtest.Step{FinishReason: "length", Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 512},
		ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool", Arguments: args[:len(args)/2]}}}
	if _, err, n := forgeWith(t, cut, expectLast(submit(fibCode), "cut off at 512 tokens")); err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeRefusesAToolWithoutDefaultExport(t *testing.T) {
	named := strings.Replace(fibCode, "export default function fib", "export function fib", 1)
	if _, err, n := forgeWith(t, submit(named), expectLast(submit(fibCode), "default-export")); err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

// Only the latest candidate travels whole: attempt 3 sends system, user
// (with attempt 1's errors as a line), attempt 2's answer and its reply.
func TestForgeHistoryStaysSmall(t *testing.T) {
	third := submit(fibCode)
	third.Check = func(r llmtest.Received) error {
		if len(r.Messages) != 4 || !strings.Contains(r.Messages[1].Content, "attempt 1: tests failed") {
			return fmt.Errorf("attempt 3 sent %d messages, user %q", len(r.Messages), r.Messages[1].Content)
		}
		return nil
	}
	if _, err, n := forgeWith(t, submit(buggyCode), submit(buggyCode), third); err != nil || n != 3 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}

func TestForgeRetriesATransientModelError(t *testing.T) {
	busy := llmtest.Step{Status: http.StatusServiceUnavailable, Error: "overloaded"}
	srv, err, n := forgeWith(t, busy, submit(fibCode))
	if err != nil || n != 1 || srv.Requests() != 2 {
		t.Fatalf("err %v after %d attempts, %d requests", err, n, srv.Requests())
	}
}

func TestForgeShortensARequestTheWindowRefuses(t *testing.T) {
	full := llmtest.Step{Status: http.StatusBadRequest, Error: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}
	short := submit(fibCode)
	short.Check = func(r llmtest.Received) error {
		if len(r.Messages) != 2 || !strings.Contains(r.Messages[1].Content, "attempt 1: tests failed") {
			return fmt.Errorf("the shorter request has %d messages: %+v", len(r.Messages), r.Messages)
		}
		return nil
	}
	if _, err, n := forgeWith(t, submit(buggyCode), full, short); err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
}
