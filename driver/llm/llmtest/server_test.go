package llmtest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

func post(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer %s is not JSON: %v", b, err)
	}
	return resp.StatusCode, v
}

func errMsg(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func TestValidation(t *testing.T) {
	cases := []struct {
		name, key, body, want string
		status                int
	}{
		{"bad json", "k", `{"model":`, "not a valid JSON", 400},
		{"no model", "k", `{"messages":[{"role":"user","content":"x"}]}`, "no model", 400},
		{"no messages", "k", `{"model":"m","messages":[]}`, "no messages", 400},
		{"no role", "k", `{"model":"m","messages":[{"content":"x"}]}`, "no role", 400},
		{"tool without id", "k", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "tool_call_id", 400},
		{"stream", "k", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, "streaming", 400},
		{"no key", "", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "API key", 401},
		{"wrong key", "nope", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "API key", 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.NewServer([]llmtest.Step{{Content: "never"}}, llmtest.WithKey("k"))
			defer s.Close()
			status, v := post(t, s.URL()+"/chat/completions", tc.key, tc.body)
			if status != tc.status || !strings.Contains(errMsg(v), tc.want) {
				t.Errorf("answer %d %v, want %d containing %q", status, v, tc.status, tc.want)
			}
			if s.Err() == nil {
				t.Error("Err is nil after an invalid request")
			}
			if s.Requests() != 1 || len(s.Received()) != 0 {
				t.Errorf("Requests %d, Received %d; want 1, 0", s.Requests(), len(s.Received()))
			}
			if strings.Contains(errMsg(v), "k\"") || (tc.key == "nope" && strings.Contains(errMsg(v), "nope")) {
				t.Errorf("the error echoes a key: %q", errMsg(v))
			}
		})
	}
}

func TestScriptInOrder(t *testing.T) {
	checked := errors.New("check ran")
	var seen error
	s := llmtest.NewServer([]llmtest.Step{
		{ToolCalls: []llm.ToolCall{{Name: "f", Arguments: `{}`}}},
		{Content: "done", Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 2}, Check: func(r llmtest.Received) error {
			seen = checked
			if len(r.Messages) != 1 || r.Messages[0].Content != "ab" {
				return errors.New("array content not joined")
			}
			return nil
		}},
	})
	defer s.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	status, v := post(t, s.URL()+"/chat/completions", "", body)
	if status != 200 {
		t.Fatalf("status %d %v", status, v)
	}
	ch := v["choices"].([]any)[0].(map[string]any)
	msg := ch["message"].(map[string]any)
	if ch["finish_reason"] != "tool_calls" || msg["content"] != nil {
		t.Errorf("choice %v", ch)
	}
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "call_0_0" || call["type"] != "function" {
		t.Errorf("tool call %v", call)
	}
	status, v = post(t, s.URL()+"/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
	if status != 200 || seen != checked {
		t.Fatalf("status %d %v, check %v", status, v, seen)
	}
	u := v["usage"].(map[string]any)
	if u["prompt_tokens"] != 3.0 || u["completion_tokens"] != 2.0 || u["total_tokens"] != 5.0 {
		t.Errorf("usage %v", u)
	}
	if r := s.Received(); len(r) != 2 || r[0].Tools[0] != "f" || r[0].Model != "m" || string(r[0].Raw) != body {
		t.Errorf("received %+v", r)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	status, v = post(t, s.URL()+"/chat/completions", "", body)
	if status != 500 || !strings.Contains(errMsg(v), "only 2 steps") || s.Err() == nil {
		t.Errorf("past the script: %d %v, Err %v", status, v, s.Err())
	}
	if s.Requests() != 3 {
		t.Errorf("Requests %d, want 3", s.Requests())
	}
}

func TestCheckFailure(t *testing.T) {
	s := llmtest.NewServer([]llmtest.Step{{Content: "x", Check: func(llmtest.Received) error { return errors.New("wrong prompt") }}})
	defer s.Close()
	status, v := post(t, s.URL()+"/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
	if status != 500 || !strings.Contains(errMsg(v), "wrong prompt") || s.Err() == nil || !strings.Contains(s.Err().Error(), "wrong prompt") {
		t.Errorf("answer %d %v, Err %v", status, v, s.Err())
	}
}

func TestUnknownPath(t *testing.T) {
	s := llmtest.NewServer(nil)
	defer s.Close()
	status, _ := post(t, s.URL()+"/completions", "", `{}`)
	if status != 404 || s.Requests() != 0 {
		t.Errorf("status %d, requests %d", status, s.Requests())
	}
}
