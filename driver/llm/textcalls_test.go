package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// modelAnswers is a corpus of answers as real models and servers write
// them (from each format's public documentation), each with the calls the
// client must read from it.
var modelAnswers = []struct {
	name, content string
	noIDs         bool
	calls         []llm.ToolCall // IDs are not compared
	form, rest    string
}{
	{name: "hermes (Qwen 2.5, NousResearch Hermes)",
		content: "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"tools/a.ts\"}}\n</tool_call>",
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "tools/a.ts"}`}}, form: llm.FormHermes},
	{name: "hermes, two parallel calls and prose",
		content: "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>",
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}, {Name: "read_file", Arguments: `{"path": "b"}`}}, form: llm.FormHermes, rest: "Let me look."},
	{name: "hermes, cut off before </tool_call>",
		content: "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}}, form: llm.FormHermes},
	{name: "llama 3.1 JSON with parameters",
		content: `{"name": "read_file", "parameters": {"path": "tools/a.ts"}}`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "tools/a.ts"}`}}, form: llm.FormJSON},
	{name: "llama 3.1 python_tag",
		content: `<|python_tag|>{"name": "read_file", "parameters": {"path": "x"}}`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "x"}`}}, form: llm.FormJSON},
	{name: "llama 3.2 JSON array",
		content: `[{"name": "read_file", "parameters": {"path": "a"}}, {"name": "list_files", "parameters": {}}]`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}, {Name: "list_files", Arguments: `{}`}}, form: llm.FormJSON},
	{name: "fenced JSON in prose",
		content: "I will read the file.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nDone.",
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}}, form: llm.FormJSON, rest: "I will read the file.\n\nDone."},
	{name: "arguments as a JSON string",
		content: `{"name": "read_file", "arguments": "{\"path\": \"a\"}"}`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}}, form: llm.FormJSON},
	{name: "OpenAI-shaped function object",
		content: `{"type": "function", "function": {"name": "read_file", "arguments": {"path": "a"}}}`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}}, form: llm.FormJSON},
	{name: "mistral [TOOL_CALLS] array",
		content: `[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a"}}]`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}}, form: llm.FormMistral},
	{name: "mistral v11 [TOOL_CALLS]name[ARGS]",
		content: `[TOOL_CALLS]read_file[ARGS]{"path": "a"}`,
		calls:   []llm.ToolCall{{Name: "read_file", Arguments: `{"path": "a"}`}}, form: llm.FormMistral},
	{name: "a JSON answer naming no offered tool is an answer",
		content: `{"name": "Ada", "arguments": {"age": 36}}`},
	{name: "prose is an answer",
		content: "The sum is 5."},
	{name: "a fenced TypeScript answer is an answer",
		content: "```ts\nexport default function () { return 1 }\n```"},
}

func TestTextToolCallsAreRead(t *testing.T) {
	tools := []llm.ToolSpec{{Name: "read_file"}, {Name: "list_files"}}
	for _, c := range modelAnswers {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer([]llmtest.Step{{Content: c.content}})
			defer srv.Close()
			cl, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := cl.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "go"}}, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Message.ToolCalls
			if len(got) != len(c.calls) {
				t.Fatalf("calls = %+v, want %+v", got, c.calls)
			}
			for i, w := range c.calls {
				if got[i].Name != w.Name || !sameJSON(got[i].Arguments, w.Arguments) || got[i].ID == "" {
					t.Errorf("call %d = %+v, want %+v with an id", i, got[i], w)
				}
			}
			if resp.CallForm != c.form {
				t.Errorf("form = %q, want %q", resp.CallForm, c.form)
			}
			if len(c.calls) > 0 && resp.Message.Content != c.rest {
				t.Errorf("content left = %q, want %q", resp.Message.Content, c.rest)
			}
			if len(c.calls) == 0 && resp.Message.Content != c.content {
				t.Errorf("an answer was changed: %q", resp.Message.Content)
			}
		})
	}
}

func TestTextToolCallsCanBeTurnedOff(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{{Content: modelAnswers[0].content}})
	defer srv.Close()
	cl, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", NoTextToolCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "go"}}, Tools: []llm.ToolSpec{{Name: "read_file"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 0 || resp.CallForm != "" {
		t.Fatalf("text calls were read although turned off: %+v", resp)
	}
}

// A server that sends tool calls without ids: the client names them, so the
// next request (which answers them) is valid.
func TestMissingToolCallIDsAreSynthesized(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{
		{NoIDs: true, ToolCalls: []llm.ToolCall{{Name: "read_file", Arguments: `{"path":"a"}`}, {Name: "read_file", Arguments: `{"path":"b"}`}}},
		{Content: "done"},
	})
	defer srv.Close()
	cl, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []llm.Message{{Role: "user", Content: "go"}}
	tools := []llm.ToolSpec{{Name: "read_file"}}
	resp, err := cl.Complete(context.Background(), llm.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].ID == "" || calls[0].ID == calls[1].ID || resp.CallForm != llm.FormAPI {
		t.Fatalf("calls = %+v (form %q), want two distinct synthetic ids", calls, resp.CallForm)
	}
	msgs = append(msgs, resp.Message)
	for _, c := range calls {
		msgs = append(msgs, llm.Message{Role: "tool", ToolCallID: c.ID, Content: "x"})
	}
	if _, err := cl.Complete(context.Background(), llm.Request{Messages: msgs, Tools: tools}); err != nil {
		t.Fatalf("the next request failed: %v", err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// The scripted server refuses what OpenAI refuses: an assistant message
// whose tool calls are not all answered.
func TestScriptedServerRefusesUnansweredCalls(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{{Content: "x"}})
	defer srv.Close()
	cl, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []llm.Message{{Role: "user", Content: "go"},
		{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "a", Name: "f", Arguments: "{}"}, {ID: "b", Name: "f", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "a", Content: "1"},
		{Role: "user", Content: "and?"}}
	_, err = cl.Complete(context.Background(), llm.Request{Messages: msgs})
	if err == nil || !strings.Contains(err.Error(), "unanswered: b") {
		t.Fatalf("err = %v, want the unanswered call named", err)
	}
}

func TestMaxTokensAndParallelAreSent(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{{Content: "x", FinishReason: "length"}})
	defer srv.Close()
	no := false
	cl, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", MaxTokens: 77, ParallelToolCalls: &no})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "go"}}, Tools: []llm.ToolSpec{{Name: "f"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.CutOff() {
		t.Errorf("finish_reason length not reported as cut off: %+v", resp)
	}
	var body map[string]any
	if err := json.Unmarshal(srv.Received()[0].Raw, &body); err != nil {
		t.Fatal(err)
	}
	if body["max_tokens"] != float64(77) || body["parallel_tool_calls"] != false {
		t.Errorf("sent max_tokens=%v parallel_tool_calls=%v, want 77 and false", body["max_tokens"], body["parallel_tool_calls"])
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	xa, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xa) == string(yb)
}
