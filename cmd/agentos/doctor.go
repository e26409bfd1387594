package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
)

// modelReport is what `agentos doctor llm` found out about the configured
// model, and what agentos does about it.
type modelReport struct {
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// Reachable: a plain chat request was answered.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// LatencyMS is the plain request's round trip.
	LatencyMS int64 `json:"latency_ms"`
	// TokensPerSecond is completion tokens per second of the longest answer.
	TokensPerSecond float64 `json:"tokens_per_second"`
	// ToolCalls is how the model called a tool: "api" (the tool_calls
	// field), a text form ("hermes", "mistral", "json"), or "none".
	ToolCalls string `json:"tool_calls"`
	// ParallelCalls is how many calls it made when asked for two at once.
	ParallelCalls int `json:"parallel_calls"`
	// ContextTokens is the context window the server reports (0: it says
	// nothing).
	ContextTokens int `json:"context_tokens,omitempty"`
	// Advice says what agentos does, or what to change.
	Advice []string `json:"advice"`
}

var addTool = llm.ToolSpec{Name: "add", Description: "Add two integers.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}

// runDoctor: agentos doctor llm.
func runDoctor(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object: the report")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "llm" {
		return usagef("expected 'agentos doctor llm' (the only check so far: the configured model)")
	}
	_, cfg, err := openDir(*root, false)
	if err != nil {
		return err
	}
	client, err := llm.New(cfg.LLM.DriverConfig())
	if err != nil {
		return fmt.Errorf("%w (set llm.model and llm.base_url in agentos.json, see docs/CONFIG.md)", err)
	}
	rep := probeModel(ctx, client)
	if *asJSON {
		if err := fprintJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printReport(stdout, rep)
	}
	if !rep.Reachable || rep.ToolCalls == "none" {
		return errFailed
	}
	return nil
}

// probeModel sends three small requests (they are billed like any other)
// and asks the server's model list for the context window.
func probeModel(ctx context.Context, c *llm.Client) modelReport {
	rep := modelReport{BaseURL: c.BaseURL(), Model: c.Model(), ToolCalls: "none", Advice: []string{}}
	user := func(s string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: s}} }
	start := time.Now()
	plain, err := c.Complete(ctx, llm.Request{Messages: user("Reply with the single word: ok"), MaxTokens: 16})
	if err != nil {
		rep.Error = err.Error()
		rep.Advice = append(rep.Advice, "the server did not answer a plain chat request: fix llm.base_url (it ends in /v1), llm.model and the API key before anything else")
		return rep
	}
	rep.Reachable, rep.LatencyMS = true, time.Since(start).Milliseconds()
	rep.TokensPerSecond = speed(plain, time.Since(start))
	start = time.Now()
	one, err := c.Complete(ctx, llm.Request{Messages: user("Use the add tool to add 2 and 3. Call the tool; do not answer in prose."), Tools: []llm.ToolSpec{addTool}})
	if err == nil {
		rep.TokensPerSecond = max(rep.TokensPerSecond, speed(one, time.Since(start)))
		if len(one.Message.ToolCalls) > 0 {
			rep.ToolCalls = one.CallForm
		}
	}
	two, err := c.Complete(ctx, llm.Request{Messages: user("Call the add tool twice in this one answer: once for 1 and 2, once for 3 and 4."), Tools: []llm.ToolSpec{addTool}})
	if err == nil {
		rep.ParallelCalls = len(two.Message.ToolCalls)
	}
	rep.ContextTokens = contextWindow(ctx, c.BaseURL(), c.Model())
	rep.Advice = advise(rep)
	return rep
}

func speed(r llm.Response, d time.Duration) float64 {
	if d <= 0 || r.Usage.CompletionTokens == 0 {
		return 0
	}
	return float64(r.Usage.CompletionTokens) / d.Seconds()
}

func advise(rep modelReport) []string {
	var a []string
	switch rep.ToolCalls {
	case llm.FormAPI:
		a = append(a, "tool calls come through the API: nothing to change")
	case "none":
		a = append(a, "the model called no tool: the forge and agents cannot work. Start vLLM with --enable-auto-tool-choice --tool-call-parser <hermes|llama3_json|mistral>, llama.cpp's server with --jinja, or use a model trained for tool calls (docs/FORGE.md, \"Models\")")
	default:
		a = append(a, fmt.Sprintf("the model writes its tool calls as text (%s): agentos reads them (llm.text_tool_calls, on by default); a server-side tool-call parser is more reliable", rep.ToolCalls))
	}
	if rep.ParallelCalls > 1 {
		a = append(a, "it makes parallel calls: agentos answers every one (the forge judges the first submit_tool)")
	}
	if rep.ContextTokens > 0 && rep.ContextTokens < 8192 {
		a = append(a, fmt.Sprintf("its context window is %d tokens: a forge keeps only the latest candidate whole, but set llm.max_tokens to at most %d so that prompt and answer fit", rep.ContextTokens, rep.ContextTokens/2))
	}
	if rep.TokensPerSecond > 0 && rep.TokensPerSecond < 20 {
		a = append(a, fmt.Sprintf("it writes %.0f tokens/s: a tool and its tests (about 1500 tokens) take %.0f s; set llm.timeout above that (e.g. \"10m\")", rep.TokensPerSecond, 1500/rep.TokensPerSecond))
	}
	return a
}

// contextWindow reads the model's context window from the server's model
// list, where vLLM (max_model_len), llama.cpp (n_ctx_train) and others
// (context_length) put it; 0 when it says nothing.
func contextWindow(ctx context.Context, base, model string) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/models", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list) != nil {
		return 0
	}
	for _, m := range list.Data {
		if id, _ := m["id"].(string); id != model && len(list.Data) > 1 {
			continue
		}
		if n := findNumber(m, "max_model_len", "n_ctx_train", "n_ctx", "context_length", "context_window"); n > 0 {
			return n
		}
	}
	return 0
}

// findNumber looks for the first of keys in v, at any depth.
func findNumber(v any, keys ...string) int {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range keys {
			if f, ok := t[k].(float64); ok && f > 0 {
				return int(f)
			}
		}
		for _, x := range t {
			if n := findNumber(x, keys...); n > 0 {
				return n
			}
		}
	}
	return 0
}

func printReport(w io.Writer, rep modelReport) {
	fmt.Fprintf(w, "model %s at %s\n", rep.Model, rep.BaseURL)
	if !rep.Reachable {
		fmt.Fprintf(w, "  reachable:       no: %s\n", rep.Error)
	} else {
		fmt.Fprintf(w, "  reachable:       yes, %d ms\n", rep.LatencyMS)
		fmt.Fprintf(w, "  tool calls:      %s\n", rep.ToolCalls)
		fmt.Fprintf(w, "  parallel calls:  %d when asked for 2\n", rep.ParallelCalls)
		if rep.ContextTokens > 0 {
			fmt.Fprintf(w, "  context window:  %d tokens\n", rep.ContextTokens)
		} else {
			fmt.Fprintln(w, "  context window:  the server does not say")
		}
		fmt.Fprintf(w, "  speed:           %.0f tokens/s\n", rep.TokensPerSecond)
	}
	for _, a := range rep.Advice {
		fmt.Fprintf(w, "- %s\n", a)
	}
}
