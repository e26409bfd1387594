package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// newServer starts a scripted server closed at cleanup, where its Err is
// checked unless the test expects server-side failures.
func newServer(t *testing.T, script []llmtest.Step, wantErr bool, opts ...llmtest.Option) *llmtest.Server {
	t.Helper()
	s := llmtest.NewServer(script, opts...)
	t.Cleanup(func() {
		s.Close()
		if err := s.Err(); err != nil && !wantErr {
			t.Errorf("scripted server: %v", err)
		}
	})
	return s
}

func newClient(t *testing.T, cfg llm.Config) *llm.Client {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "AGENTOS_TEST_LLM_KEY_UNSET"
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func user(s string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: s}}}
}

func TestCompleteContent(t *testing.T) {
	t.Setenv("AGENTOS_TEST_LLM_KEY", "k-123")
	temp := 0.25
	srv := newServer(t, []llmtest.Step{{
		Content: "hello there",
		Check: func(r llmtest.Received) error {
			if r.Model != "m1" {
				return fmt.Errorf("model %q, want m1", r.Model)
			}
			if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Content != "hi" {
				return fmt.Errorf("messages %+v", r.Messages)
			}
			var raw map[string]any
			if err := json.Unmarshal(r.Raw, &raw); err != nil {
				return err
			}
			if raw["temperature"] != 0.25 || raw["max_tokens"] != float64(64) {
				return fmt.Errorf("temperature %v, max_tokens %v", raw["temperature"], raw["max_tokens"])
			}
			if _, ok := raw["tools"]; ok {
				return errors.New("tools sent without tools")
			}
			return nil
		},
	}}, false, llmtest.WithKey("k-123"))
	c := newClient(t, llm.Config{BaseURL: srv.URL(), Model: "m1", APIKeyEnv: "AGENTOS_TEST_LLM_KEY"})
	resp, err := c.Complete(context.Background(), llm.Request{
		Messages:    []llm.Message{{Role: llm.RoleSystem, Content: "be brief"}, {Role: llm.RoleUser, Content: "hi"}},
		Temperature: &temp,
		MaxTokens:   64,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Role != "assistant" || resp.Message.Content != "hello there" || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("message %+v", resp.Message)
	}
	if resp.FinishReason != "stop" {
		t.Errorf("finish reason %q", resp.FinishReason)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage %+v", resp.Usage)
	}
	if resp.Usage.CostUSD != 0 {
		t.Errorf("unpriced call cost %v", resp.Usage.CostUSD)
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests, want 1", srv.Requests())
	}
}

func TestToolCallRoundTrip(t *testing.T) {
	srv := newServer(t, []llmtest.Step{
		{
			ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "add", Arguments: `{"a":2,"b":3}`}},
			Check: func(r llmtest.Received) error {
				if len(r.Tools) != 2 || r.Tools[0] != "add" || r.Tools[1] != "now" {
					return fmt.Errorf("tools %v, want [add now]", r.Tools)
				}
				var raw struct {
					Tools []struct {
						Type     string `json:"type"`
						Function struct {
							Description string          `json:"description"`
							Parameters  json.RawMessage `json:"parameters"`
						} `json:"function"`
					} `json:"tools"`
				}
				if err := json.Unmarshal(r.Raw, &raw); err != nil {
					return err
				}
				if raw.Tools[0].Type != "function" || raw.Tools[0].Function.Description != "Adds." || !strings.Contains(string(raw.Tools[0].Function.Parameters), `"required":["a","b"]`) {
					return fmt.Errorf("tool 0 sent as %+v", raw.Tools[0])
				}
				return nil
			},
		},
		{
			Content: "5",
			Check: func(r llmtest.Received) error {
				if len(r.Messages) != 3 {
					return fmt.Errorf("%d messages, want 3: %+v", len(r.Messages), r.Messages)
				}
				a, tm := r.Messages[1], r.Messages[2]
				if a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0] != (llm.ToolCall{ID: "call_a", Name: "add", Arguments: `{"a":2,"b":3}`}) {
					return fmt.Errorf("assistant message %+v", a)
				}
				if tm.Role != "tool" || tm.ToolCallID != "call_a" || tm.Content != `{"sum":5}` {
					return fmt.Errorf("tool message %+v", tm)
				}
				return nil
			},
		},
	}, false)
	c := newClient(t, llm.Config{BaseURL: srv.URL()})
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "2+3?"}},
		Tools: []llm.ToolSpec{
			{Name: "add", Description: "Adds.", Parameters: json.RawMessage(addSchema)},
			{Name: "now"},
		},
	}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].ID != "call_a" {
		t.Fatalf("response %+v", resp)
	}
	req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "call_a", Content: `{"sum":5}`})
	resp, err = c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "5" || resp.FinishReason != "stop" {
		t.Errorf("response %+v", resp)
	}
	if srv.Requests() != 2 {
		t.Errorf("%d requests, want 2", srv.Requests())
	}
}

func TestUsageAndCost(t *testing.T) {
	srv := newServer(t, []llmtest.Step{{Content: "ok", Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1500}}}, false)
	c := newClient(t, llm.Config{BaseURL: srv.URL(), PriceInPerMTok: 2.5, PriceOutPerMTok: 10})
	resp, err := c.Complete(context.Background(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	if u.PromptTokens != 1000 || u.CompletionTokens != 500 || u.TotalTokens != 1500 {
		t.Errorf("usage %+v", u)
	}
	if want := 0.0025 + 0.005; math.Abs(u.CostUSD-want) > 1e-12 {
		t.Errorf("cost %v, want %v", u.CostUSD, want)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestErrorCodes(t *testing.T) {
	cases := []struct {
		name     string
		steps    []llmtest.Step
		key      string // server key
		noV1     bool   // base URL without /v1
		refused  bool
		req      llm.Request
		code     string
		contains []string
		requests int
	}{
		{name: "500", steps: []llmtest.Step{{Status: 500, Error: "boom"}}, code: driver.CodeUnavailable, contains: []string{"500", "boom"}, requests: 1},
		{name: "503", steps: []llmtest.Step{{Status: 503}}, code: driver.CodeUnavailable, contains: []string{"503"}, requests: 1},
		{name: "429", steps: []llmtest.Step{{Status: 429, Error: "slow down", RetryAfter: 7}}, code: driver.CodeUnavailable, contains: []string{"429", "slow down", "retry after 7"}, requests: 1},
		{name: "400", steps: []llmtest.Step{{Status: 400, Error: "context too long"}}, code: driver.CodeInvalid, contains: []string{"400", "context too long"}, requests: 1},
		{name: "401", steps: []llmtest.Step{{Content: "never"}}, key: "server-key", code: driver.CodeInvalid, contains: []string{"401", "AGENTOS_TEST_LLM_KEY_UNSET"}, requests: 1},
		{name: "404", steps: []llmtest.Step{{Content: "never"}}, noV1: true, code: driver.CodeInvalid, contains: []string{"404", "/v1"}, requests: 0},
		{name: "script exhausted", steps: nil, code: driver.CodeUnavailable, contains: []string{"500", "only 0 steps"}, requests: 1},
		{name: "connection refused", refused: true, code: driver.CodeUnavailable, contains: []string{"cannot reach"}},
		{name: "no messages", steps: []llmtest.Step{{Content: "never"}}, req: llm.Request{}, code: driver.CodeInvalid, contains: []string{"no messages"}},
		{name: "unknown role", steps: []llmtest.Step{{Content: "never"}}, req: llm.Request{Messages: []llm.Message{{Role: "wizard", Content: "x"}}}, code: driver.CodeInvalid, contains: []string{"wizard"}},
		{name: "tool message without id", steps: []llmtest.Step{{Content: "never"}}, req: llm.Request{Messages: []llm.Message{{Role: "tool", Content: "x"}}}, code: driver.CodeInvalid, contains: []string{"tool_call_id"}},
		{name: "bad tool schema", steps: []llmtest.Step{{Content: "never"}}, req: llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, code: driver.CodeInvalid, contains: []string{"JSON Schema object"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var base string
			var srv *llmtest.Server
			if tc.refused {
				base = "http://" + freeAddr(t) + "/v1"
			} else {
				var opts []llmtest.Option
				if tc.key != "" {
					opts = append(opts, llmtest.WithKey(tc.key))
				}
				srv = newServer(t, tc.steps, true, opts...)
				base = srv.URL()
				if tc.noV1 {
					base = strings.TrimSuffix(base, "/v1")
				}
			}
			c := newClient(t, llm.Config{BaseURL: base})
			req := tc.req
			if req.Messages == nil && req.Tools == nil && tc.name != "no messages" {
				req = user("hi")
			}
			_, err := c.Complete(context.Background(), req)
			var de *driver.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v, want *driver.Error", err, err)
			}
			if de.Code != tc.code {
				t.Errorf("code %q, want %q (%v)", de.Code, tc.code, err)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if srv != nil && srv.Requests() != tc.requests {
				t.Errorf("%d requests, want %d (the driver must not retry)", srv.Requests(), tc.requests)
			}
		})
	}
}

func TestTimeoutIsUnavailable(t *testing.T) {
	// A server that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	defer func() { ln.Close(); <-done }()
	c := newClient(t, llm.Config{BaseURL: "http://" + ln.Addr().String() + "/v1", Timeout: 50 * time.Millisecond})
	_, err = c.Complete(context.Background(), user("hi"))
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != driver.CodeUnavailable || !strings.Contains(de.Message, "no answer within") {
		t.Fatalf("error %v, want unavailable timeout", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Complete(ctx, user("hi"))
	if !errors.As(err, &de) || de.Code != driver.CodeUnavailable || !strings.Contains(de.Message, "cancelled") {
		t.Fatalf("error %v, want unavailable cancelled", err)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	const sentinel = "sk-SENTINEL-0123456789abcdef"
	t.Setenv("AGENTOS_TEST_SECRET_KEY", sentinel)
	var errs []error
	collect := func(c *llm.Client, req llm.Request) {
		_, err := c.Complete(context.Background(), req)
		if err == nil {
			t.Fatal("no error")
		}
		errs = append(errs, err)
		// The same call through the device.
		b, _ := json.Marshal(req)
		_, err = c.Device().Do(context.Background(), llm.OpComplete, b)
		if err != nil {
			errs = append(errs, err)
		}
	}
	// A server that echoes the key in its error, one that refuses it, one that fails.
	echo := newServer(t, []llmtest.Step{{Status: 400, Error: "bad key " + sentinel}, {Status: 500, Error: "key=" + sentinel}}, true)
	collect(newClient(t, llm.Config{BaseURL: echo.URL(), APIKeyEnv: "AGENTOS_TEST_SECRET_KEY"}), user("hi"))
	wrong := newServer(t, []llmtest.Step{{Content: "x"}}, true, llmtest.WithKey("other"))
	collect(newClient(t, llm.Config{BaseURL: wrong.URL(), APIKeyEnv: "AGENTOS_TEST_SECRET_KEY"}), user("hi"))
	collect(newClient(t, llm.Config{BaseURL: "http://" + freeAddr(t) + "/v1", APIKeyEnv: "AGENTOS_TEST_SECRET_KEY"}), user("hi"))
	collect(newClient(t, llm.Config{BaseURL: wrong.URL(), APIKeyEnv: "AGENTOS_TEST_SECRET_KEY"}), llm.Request{})
	if _, err := llm.New(llm.Config{APIKeyEnv: "AGENTOS_TEST_SECRET_KEY", Model: "", BaseURL: "x"}); err != nil {
		errs = append(errs, err)
	}
	if len(errs) < 6 {
		t.Fatalf("only %d errors collected", len(errs))
	}
	for _, err := range errs {
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, sentinel) || strings.Contains(s, "SENTINEL") {
				t.Errorf("the API key leaks in an error: %s", s)
			}
		}
	}
	if !strings.Contains(errs[0].Error(), "[redacted]") {
		t.Errorf("the echoed key was not redacted: %v", errs[0])
	}
}

func TestDeviceThroughMux(t *testing.T) {
	srv := newServer(t, []llmtest.Step{{
		Content: "from the device",
		Usage:   llm.Usage{PromptTokens: 10, CompletionTokens: 4},
		Check: func(r llmtest.Received) error {
			if len(r.Tools) != 1 || r.Tools[0] != "add" {
				return fmt.Errorf("tools %v", r.Tools)
			}
			return nil
		},
	}}, false)
	c := newClient(t, llm.Config{BaseURL: srv.URL(), PriceInPerMTok: 1e6, PriceOutPerMTok: 2e6})
	var host driver.Host = driver.Mux{llm.Driver: c.Device()}
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}, Tools: []llm.ToolSpec{{Name: "add", Parameters: json.RawMessage(addSchema)}}}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tools":[{"name":"add","parameters":{`) {
		t.Errorf("request JSON %s", b)
	}
	out, err := host.Do(context.Background(), driver.Call{Seq: 1, Driver: llm.Driver, Op: llm.OpComplete, Request: b})
	if err != nil {
		t.Fatal(err)
	}
	var resp llm.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "from the device" || resp.Usage.TotalTokens != 14 || resp.Usage.CostUSD != 18 {
		t.Errorf("response %s", out)
	}
	for _, k := range []string{`"message":`, `"finish_reason":"stop"`, `"prompt_tokens":10`, `"completion_tokens":4`, `"total_tokens":14`, `"cost_usd":18`} {
		if !strings.Contains(string(out), k) {
			t.Errorf("response JSON %s lacks %s", out, k)
		}
	}

	// Bad calls never reach the server.
	bad := []struct {
		op, req, code string
	}{
		{"chat", `{}`, driver.CodeUnsupported},
		{"complete", `{"messages":[{"role":"user","content":"x"}],"temprature":1}`, driver.CodeInvalid},
		{"complete", `not json`, driver.CodeInvalid},
		{"complete", ``, driver.CodeInvalid},
	}
	for _, b := range bad {
		_, err := host.Do(context.Background(), driver.Call{Seq: 2, Driver: llm.Driver, Op: b.op, Request: json.RawMessage(b.req)})
		if de := driver.AsError(err); err == nil || de.Code != b.code {
			t.Errorf("%s %s: error %v, want code %s", b.op, b.req, err, b.code)
		}
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests, want 1", srv.Requests())
	}
}

func TestNewConfig(t *testing.T) {
	t.Setenv(llm.EnvModel, "")
	t.Setenv(llm.EnvBaseURL, "")
	_, err := llm.New(llm.Config{})
	if !errors.Is(err, llm.ErrNoModel) || !strings.Contains(err.Error(), llm.EnvModel) {
		t.Errorf("error %v, want ErrNoModel naming %s", err, llm.EnvModel)
	}
	c, err := llm.New(llm.Config{Model: "m"})
	if err != nil || c.BaseURL() != llm.DefaultBaseURL {
		t.Errorf("default base URL: %v %v", c, err)
	}

	t.Setenv(llm.EnvModel, "env-model")
	t.Setenv(llm.EnvBaseURL, "http://127.0.0.1:9/v1")
	c, err = llm.New(llm.Config{})
	if err != nil || c.Model() != "env-model" || c.BaseURL() != "http://127.0.0.1:9/v1" {
		t.Errorf("env defaults: %v %v", c, err)
	}
	for _, u := range []string{"127.0.0.1:8080/v1", "ftp://x/v1", "http://user:pw@host/v1"} {
		if _, err := llm.New(llm.Config{BaseURL: u}); !errors.Is(err, llm.ErrBadBaseURL) || strings.Contains(err.Error(), "pw") {
			t.Errorf("base URL %q: error %v, want ErrBadBaseURL without the password", u, err)
		}
	}
}

// The SDK's own OPENAI_* variables MUST NOT redirect or alter the driver.
func TestIgnoresOpenAIEnv(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://"+freeAddr(t)+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-openai-env")
	srv := newServer(t, []llmtest.Step{{Content: "ok"}}, false, llmtest.WithKey("k"))
	t.Setenv("AGENTOS_TEST_LLM_KEY", "k")
	c := newClient(t, llm.Config{BaseURL: srv.URL(), APIKeyEnv: "AGENTOS_TEST_LLM_KEY"})
	if _, err := c.Complete(context.Background(), user("hi")); err != nil {
		t.Fatal(err)
	}
}

// A proxy in front of the model MAY answer errors that are not OpenAI JSON.
func TestNonJSONErrorBody(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{{502, driver.CodeUnavailable}, {413, driver.CodeInvalid}} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>gateway trouble</html>", tc.status)
		}))
		c := newClient(t, llm.Config{BaseURL: hs.URL + "/v1"})
		_, err := c.Complete(context.Background(), user("hi"))
		hs.Close()
		var de *driver.Error
		if !errors.As(err, &de) || de.Code != tc.code || !strings.Contains(de.Message, strconv.Itoa(tc.status)) {
			t.Errorf("status %d: error %v, want %s", tc.status, err, tc.code)
		}
	}
}

// A 200 that is not a chat completion is an io error.
func TestBadCompletionBody(t *testing.T) {
	for _, body := range []string{`{"id":"x","choices":[]}`, `not json`} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}))
		c := newClient(t, llm.Config{BaseURL: hs.URL + "/v1"})
		_, err := c.Complete(context.Background(), user("hi"))
		hs.Close()
		var de *driver.Error
		if !errors.As(err, &de) || de.Code != driver.CodeIO {
			t.Errorf("body %s: error %v, want io", body, err)
		} else {
			t.Logf("body %s: %v", body, err)
		}
	}
}
