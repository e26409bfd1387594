package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
)

// Step is what the model answers to one request.
type Step struct {
	// Content is a final text answer (finish_reason "stop").
	Content string
	// ToolCalls, when set, make the answer a request to call tools
	// (finish_reason "tool_calls"). An empty ID is filled in as "call_<n>".
	ToolCalls []llm.ToolCall
	// Usage is the token counts reported back; zero means rough counts
	// (about one token per four characters). CostUSD is ignored: the
	// driver computes it.
	Usage llm.Usage
	// Check, when set, is called with what the driver sent before the step
	// is answered; an error is recorded in Err and answered as a 500.
	Check func(r Received) error
	// Status, when non-zero, makes the server answer this HTTP status with
	// an OpenAI-style error body carrying Error, instead of a completion.
	Status int
	// Error is the error message answered with Status.
	Error string
	// RetryAfter is sent as the Retry-After header (seconds) with Status.
	RetryAfter int
	// NoIDs sends ToolCalls without ids, as some OpenAI-compatible servers
	// do (otherwise an empty ID is filled in).
	NoIDs bool
	// FinishReason, when set, replaces the finish_reason answered ("length"
	// for an answer cut off at the token cap).
	FinishReason string
}

// Received is one chat request as the server decoded it.
type Received struct {
	// Model is the request's model.
	Model string
	// Messages are the request's messages; array contents are joined text.
	Messages []llm.Message
	// Tools are the names of the request's tools, in order.
	Tools []string
	// Raw is the request body as sent.
	Raw []byte
}

// Option configures a Server.
type Option func(*Server)

// WithKey makes the server require "Authorization: Bearer <key>" and answer
// 401 without it.
func WithKey(key string) Option { return func(s *Server) { s.key = key } }

// Server is a scripted OpenAI-compatible model server on loopback.
type Server struct {
	key    string
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}
	mu     sync.Mutex
	script []Step
	// respond, when set, answers every request instead of the script
	// (NewResponder).
	respond func(Received) Step
	next    int
	reqs    int
	recv    []Received
	err     error
}

// NewServer starts a server answering script in order. It panics if it
// cannot listen on loopback (like httptest.NewServer).
func NewServer(script []Step, opts ...Option) *Server {
	s := &Server{script: append([]Step(nil), script...), done: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("llmtest: cannot listen on loopback: %v", err))
	}
	s.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("llmtest: no endpoint %s %s (the scripted model serves POST /v1/chat/completions)", r.Method, r.URL.Path))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// NewResponder starts a server answering every request with respond(r):
// a model whose answer depends on what it is asked (several forges of
// different specs at once), where a script's fixed order cannot fit.
// respond runs unlocked and concurrently, one call per request; its Step's
// Check is ignored (respond sees the request itself).
func NewResponder(respond func(Received) Step, opts ...Option) *Server {
	s := NewServer(nil, opts...)
	s.mu.Lock()
	s.respond = respond
	s.mu.Unlock()
	return s
}

// URL returns the base URL to configure the driver with, ending in /v1.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Requests returns how many chat requests the server received, valid or not.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs
}

// Received returns the valid requests received so far, in order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.recv...)
}

// Err returns the first Check failure or protocol problem, or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the server, closing its connections, and waits for it.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

func (s *Server) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// wire types: the subset of the OpenAI format the server reads.
type wireRequest struct {
	Model    *string       `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs++
	if r.Method != http.MethodPost {
		s.fail(fmt.Errorf("llmtest: request %d: method %s, want POST", s.reqs, r.Method))
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "llmtest: use POST")
		return
	}
	if s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key {
		s.fail(fmt.Errorf("llmtest: request %d: missing or wrong bearer key", s.reqs))
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "llmtest: missing or wrong API key in the Authorization header")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		s.fail(fmt.Errorf("llmtest: request %d: reading the body: %w", s.reqs, err))
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmtest: cannot read the body")
		return
	}
	rec, err := decodeRequest(body)
	if err == nil {
		err = validateConversation(rec.Messages)
	}
	if err != nil {
		s.fail(fmt.Errorf("llmtest: request %d: %w", s.reqs, err))
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmtest: "+err.Error())
		return
	}
	s.recv = append(s.recv, rec)
	if s.respond != nil {
		n, respond := len(s.recv)-1, s.respond
		s.mu.Unlock()
		step := respond(rec)
		s.mu.Lock()
		if step.Status != 0 {
			writeError(w, step.Status, "server_error", step.Error)
			return
		}
		writeJSON(w, http.StatusOK, completion(n, rec, step))
		return
	}
	if s.next >= len(s.script) {
		err := fmt.Errorf("llmtest: request %d: the script has only %d steps", s.reqs, len(s.script))
		s.fail(err)
		writeError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	n := s.next
	step := s.script[n]
	s.next++
	if step.Check != nil {
		// Check runs unlocked: it MAY call the server's accessors.
		s.mu.Unlock()
		err := step.Check(rec)
		s.mu.Lock()
		if err != nil {
			err = fmt.Errorf("llmtest: step %d: Check failed: %w", n, err)
			s.fail(err)
			writeError(w, http.StatusInternalServerError, "server_error", err.Error())
			return
		}
	}
	if step.Status != 0 {
		if step.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(step.RetryAfter))
		}
		msg := step.Error
		if msg == "" {
			msg = "llmtest: scripted " + http.StatusText(step.Status)
		}
		typ := "invalid_request_error"
		if step.Status >= 500 {
			typ = "server_error"
		}
		writeError(w, step.Status, typ, msg)
		return
	}
	writeJSON(w, http.StatusOK, completion(n, rec, step))
}

func decodeRequest(body []byte) (Received, error) {
	rec := Received{Raw: body}
	var wr wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&wr); err != nil {
		return rec, fmt.Errorf("the body is not a valid JSON request: %v", err)
	}
	if dec.More() {
		return rec, errors.New("the body has data after the JSON object")
	}
	if wr.Model == nil || *wr.Model == "" {
		return rec, errors.New("the request has no model")
	}
	if wr.Stream {
		return rec, errors.New("streaming is not supported by the scripted model")
	}
	if len(wr.Messages) == 0 {
		return rec, errors.New("the request has no messages")
	}
	rec.Model = *wr.Model
	for i, m := range wr.Messages {
		if m.Role == "" {
			return rec, fmt.Errorf("message %d has no role", i)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return rec, fmt.Errorf("message %d: %v", i, err)
		}
		lm := llm.Message{Role: m.Role, Content: text, Name: m.Name, ToolCallID: m.ToolCallID}
		if m.Role == "tool" && m.ToolCallID == "" {
			return rec, fmt.Errorf("message %d is a tool message without tool_call_id", i)
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Function.Name == "" {
				return rec, fmt.Errorf("message %d has a tool call without id or function name", i)
			}
			lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		rec.Messages = append(rec.Messages, lm)
	}
	for i, t := range wr.Tools {
		if t.Function.Name == "" {
			return rec, fmt.Errorf("tool %d has no function name", i)
		}
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	return rec, nil
}

// validateConversation applies OpenAI's chat-completions rules on the order
// of tool calls and their answers, so that a client that would be refused
// with a 400 by OpenAI is refused here too: every tool call of an assistant
// message is answered by exactly one tool message before any other message,
// and a tool message answers a call of the assistant message before it.
func validateConversation(msgs []llm.Message) error {
	open := map[string]bool{} // calls of the last assistant message not yet answered
	for i, m := range msgs {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: a tool message answers %q, which is not an unanswered tool call of the assistant message before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d (%s): an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; unanswered: %s", i, m.Role, strings.Join(sortedKeys(open), ", "))
		}
		for _, tc := range m.ToolCalls {
			if open[tc.ID] {
				return fmt.Errorf("message %d: tool call id %q is used twice", i, tc.ID)
			}
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("the last message calls tools that no tool message answers: %s", strings.Join(sortedKeys(open), ", "))
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// contentText reads a message content: a string, null, or an array of
// {type:"text", text} parts (joined).
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content is neither a string nor an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func completion(n int, rec Received, step Step) map[string]any {
	msg := map[string]any{"role": "assistant", "content": step.Content}
	finish := "stop"
	out := len(step.Content)
	if len(step.ToolCalls) > 0 {
		finish = "tool_calls"
		if step.Content == "" {
			msg["content"] = nil
		}
		var calls []map[string]any
		for i, tc := range step.ToolCalls {
			id := tc.ID
			if id == "" && !step.NoIDs {
				id = fmt.Sprintf("call_%d_%d", n, i)
			}
			calls = append(calls, map[string]any{
				"id":       id,
				"type":     "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			})
			out += len(tc.Name) + len(tc.Arguments)
		}
		msg["tool_calls"] = calls
	}
	if step.FinishReason != "" {
		finish = step.FinishReason
	}
	u := step.Usage
	if u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0 {
		in := 0
		for _, m := range rec.Messages {
			in += len(m.Content) + 4
			for _, tc := range m.ToolCalls {
				in += len(tc.Name) + len(tc.Arguments)
			}
		}
		u.PromptTokens = int64(in/4 + 1)
		u.CompletionTokens = int64(out/4 + 1)
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-llmtest-%d", n),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   rec.Model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       msg,
			"finish_reason": finish,
			"logprobs":      nil,
		}},
		"usage": map[string]any{
			"prompt_tokens":     u.PromptTokens,
			"completion_tokens": u.CompletionTokens,
			"total_tokens":      u.TotalTokens,
		},
	}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"llmtest: cannot encode the answer","type":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
