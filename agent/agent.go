// Package agent is the agent loop: a model calls the kernel tools, under a
// process's capabilities and quota, until it answers.
//
// # Protocol
//
// Run sends the task with a system prompt that states the protocol (reuse
// or forge tools, no one-off scripts, the standards) and the kernel tools as
// LLM tools; each tool call the model makes is run through the tool's Call
// (so it is checked, charged and journaled like any kernel call) and its
// result sent back, truncated when huge. The loop ends with the model's
// answer, or with a clear Reason: the step budget ran out, the model
// repeated the same call without progress, the model failed.
//
// RunProcess runs the loop as a process of a booted node (what
// agentos.Runtime.RunAgent does): the kernel spawns it with its grants and
// quota, the kernel tools are bound to it, and its model calls and tool
// calls are journaled, in one sequence, under a run of kind "agent".
//
// # Restart means resume
//
// Main is the body of such a process: a supervisor's restart of it (and
// ImageMain, a restore of its snapshot) resumes the run its previous
// incarnation left unfinished, answering the recorded model and tool calls
// from the journal up to the crash point (docs/GOVERNANCE.md).
//
// # Privacy
//
// With a pii.Tokenizer (Options.PII, ProcessOptions.PII), the model is
// sent tokens in place of personal data: the task, every tool result and
// error (CallTool), every chat request (pii.Tokenizer.ModelMiddleware,
// above the journal). See docs/MCP.md.
//
// # Failure
//
// A tool call that fails is not the end: its error goes back to the model,
// which may correct itself. Only the budget, repetition or the model itself
// end a run early; none of them is silent.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/pii"
	"github.com/agentos-run/agentos/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the OpenTelemetry scope of the agents' spans.
const instrumentation = "github.com/agentos-run/agentos/agent"

// SystemPrompt is the protocol an agent follows.
const SystemPrompt = `You are an agent on agentos. You act only through the kernel tools you are given.
Protocol:
1. Before writing code, call search_tools: if a tool fits (score near 1), reuse it with exec_tool.
2. Otherwise call forge_tool with a precise spec (inputs, output, edge cases): it writes, checks, tests and registers a reusable tool. Never write one-off scripts.
3. Run tools with exec_tool; query data with exec_sql (parameters bound, never interpolated).
4. When a call fails, read the error and fix the cause; do not repeat the same call.
5. Keep what later work needs with remember (facts, lessons, preferences); recall(query) searches your memory, and brings back turns paged out of your context.
6. Answer the task in plain text when you are done.`

// Options configure Run. LLM and Tools are required.
type Options struct {
	// LLM answers chat requests (llm.Client.Device(), possibly journaled
	// through a driver.Host).
	LLM driver.Host
	// Tools are the kernel tools bound to the agent's process.
	Tools []kerneltool.Tool
	// System overrides SystemPrompt.
	System string
	// MaxSteps bounds the model requests (0: 20).
	MaxSteps int
	// MaxResultBytes truncates a tool result sent back (0: 16 KiB).
	MaxResultBytes int
	// RepeatLimit ends the run when the same call (tool and arguments) is
	// made this many times (0: 3).
	RepeatLimit int
	// ModelRetries is how many times a transient model error (the server
	// unreachable, 5xx, 429, a timeout) is asked again, after 1 s, 2 s ...
	// (or the server's Retry-After); each try is a call of its own, so a
	// journaled run records and replays it. 0: 2; negative: none.
	ModelRetries int
	// Charge is told every answer's usage (the process's quota); an error
	// ends the run.
	Charge func(llm.Usage) error
	// PII tokenizes every tool result and error before it goes back to
	// the model (and into Result), and restores the model's exec_sql
	// arguments when pii.restore_to covers "sql" (see docs/MCP.md).
	// nil: nothing is tokenized.
	PII *pii.Tokenizer
	// Journal, when set, records the tool calls too: each is a driver call
	// (driver ToolDriver, op the tool's name, request its arguments,
	// response what went back to the model, tokenized) passed through
	// Journal, in one sequence with the model calls (seq 1, 2, ... in the
	// order they are made). Give it the same journal middleware as LLM's
	// (a run's Middleware, or a Recovery's): a resumed run then answers
	// its recorded tool calls from the journal as it answers its model
	// calls, and performs none of them again. nil: the tools are called
	// directly, and the seqs still count both.
	Journal driver.Middleware
	// Paging keeps the conversation within the model's window: when the
	// next request would not fit, the oldest turns (never the system
	// prompt or the task, never a tool call without its result) are paged
	// out (Paging.PageOut) and a note listing them stays in context; the
	// recall kernel tool brings them back. The zero value pages nothing.
	Paging Paging
	// Tracer starts an "execute_tool {name}" span around each tool call
	// (see package telemetry). nil: the OpenTelemetry global's.
	Tracer trace.Tracer
	// CaptureContent records each tool call's arguments and result on its
	// span. IMPORTANT: off by default: they MAY hold personal data.
	CaptureContent bool
}

// ToolDriver is the driver name of an agent's kernel tool calls in its
// journaled run (Options.Journal).
const ToolDriver = "kernel"

// The reasons a run ends.
const (
	ReasonAnswer   = "answer"         // the model answered
	ReasonBudget   = "step_budget"    // MaxSteps model requests without an answer
	ReasonRepeated = "repeated_calls" // the same call RepeatLimit times
)

// Call is one tool call the model made.
type Call struct {
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Error     string `json:"error,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Result is how a run ended.
type Result struct {
	Answer string    `json:"answer,omitempty"`
	Reason string    `json:"reason"`
	Steps  int       `json:"steps"`
	Calls  []Call    `json:"calls"`
	Usage  llm.Usage `json:"usage"`
	// Paged counts the turns paged out of the context (Options.Paging).
	Paged int `json:"paged,omitempty"`
	// Lessons are the lessons distilled from the run and kept in the
	// agent's memory (ProcessOptions.Distill).
	Lessons []string `json:"lessons,omitempty"`
}

// Run runs task to its end.
func Run(ctx context.Context, opts Options, task string) (Result, error) {
	if opts.LLM == nil || len(opts.Tools) == 0 {
		return Result{}, errors.New("agent: Run needs a model and tools")
	}
	opts = opts.withDefaults()
	pg, err := newPager(opts.Paging)
	if err != nil {
		return Result{}, err
	}
	l := newLoop(opts, pg, task)
	for l.res.Steps < opts.MaxSteps {
		if done, err := l.step(ctx); done || err != nil {
			return l.res, err
		}
	}
	l.res.Reason = ReasonBudget
	return l.res, nil
}

// withDefaults is o with its zero limits and tracer defaulted.
func (o Options) withDefaults() Options {
	if o.MaxSteps <= 0 {
		o.MaxSteps = 20
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 16 << 10
	}
	if o.RepeatLimit <= 0 {
		o.RepeatLimit = 3
	}
	if o.Tracer == nil {
		o.Tracer = telemetry.Tracer(nil, instrumentation)
	}
	return o
}

// loop is a run of the agent loop: the conversation so far and what the
// run has done.
type loop struct {
	opts     Options
	tools    map[string]kerneltool.Tool
	specs    []llm.ToolSpec
	toolHost driver.Host
	pg       *pager // nil: no paging
	msgs     []llm.Message
	seen     map[string]int // how often each call (tool and canonical arguments) was made
	res      Result
	seq      uint64 // model and tool calls, in the order they are made
}

// newLoop begins the loop of task: the system prompt and the task, the
// tools offered to the model and the host their calls go to.
func newLoop(opts Options, pg *pager, task string) *loop {
	system := opts.System
	if system == "" {
		system = SystemPrompt
	}
	l := &loop{
		opts:  opts,
		tools: map[string]kerneltool.Tool{},
		specs: make([]llm.ToolSpec, 0, len(opts.Tools)),
		pg:    pg,
		msgs:  []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: task}},
		seen:  map[string]int{},
		res:   Result{Calls: []Call{}},
	}
	for _, t := range opts.Tools {
		l.tools[t.Name] = t
		l.specs = append(l.specs, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	l.toolHost = toolHost(l.tools, opts)
	return l
}

// toolHost is the host of a run's tool calls (CallTool), journaled when
// opts.Journal is set. The model is then sent a result as the journal
// stores it, so that a resumed run, answered from the journal, sends the
// same.
func toolHost(tools map[string]kerneltool.Tool, opts Options) driver.Host {
	var live driver.Host = driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
		return CallTool(ctx, tools[c.Op], c.Request, opts.PII)
	})
	if opts.Journal == nil {
		return live
	}
	return opts.Journal(driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
		out, err := live.Do(ctx, c)
		if err == nil {
			out = journal.Canonical(out)
		}
		return out, err
	}))
}

// step asks the model once and runs the tools it calls. done is true when
// the run ended: an answer, a repeated call, or an error.
func (l *loop) step(ctx context.Context) (done bool, err error) {
	if err := l.fit(ctx); err != nil {
		return true, err
	}
	l.res.Steps++
	answer, err := l.ask(ctx)
	if err != nil {
		return true, err
	}
	l.msgs = append(l.msgs, answer.Message)
	if len(answer.Message.ToolCalls) > 0 {
		return l.callTools(ctx, answer), nil
	}
	if answer.CutOff() { // not an answer: half of one
		l.msgs = append(l.msgs, llm.Message{Role: llm.RoleUser, Content: cutOffNote(answer) + ": answer again, shorter."})
		return false, nil
	}
	l.res.Answer, l.res.Reason = answer.Message.Content, ReasonAnswer
	return true, nil
}

// fit pages the conversation out to fit the model's window, when the run
// pages; a conversation that cannot fit ends the run (ReasonWindow).
func (l *loop) fit(ctx context.Context) error {
	if l.pg == nil {
		return nil
	}
	msgs, err := l.pg.fit(ctx, l.msgs, l.specs)
	if err != nil {
		if errors.As(err, new(*WindowError)) {
			l.res.Reason = ReasonWindow
		}
		return err
	}
	l.msgs = msgs
	l.res.Paged = l.pg.paged
	return nil
}

// ask sends the conversation to the model and returns its answer, whose
// usage is added to the run's and charged (Options.Charge).
func (l *loop) ask(ctx context.Context) (llm.Response, error) {
	req, _ := json.Marshal(llm.Request{Messages: l.msgs, Tools: l.specs})
	out, err := askModel(ctx, l.opts.LLM, &l.seq, req, l.opts.ModelRetries)
	if err != nil {
		return llm.Response{}, fmt.Errorf("agent step %d: the model failed: %w", l.res.Steps, err)
	}
	var answer llm.Response
	if err := json.Unmarshal(out, &answer); err != nil {
		return llm.Response{}, fmt.Errorf("agent step %d: %w", l.res.Steps, err)
	}
	l.res.Usage.PromptTokens += answer.Usage.PromptTokens
	l.res.Usage.CompletionTokens += answer.Usage.CompletionTokens
	l.res.Usage.TotalTokens += answer.Usage.TotalTokens
	l.res.Usage.CostUSD += answer.Usage.CostUSD
	if l.pg != nil {
		l.pg.observe(l.msgs, l.specs, answer.Usage.PromptTokens)
	}
	if l.opts.Charge != nil {
		if err := l.opts.Charge(answer.Usage); err != nil {
			return llm.Response{}, err
		}
	}
	return answer, nil
}

// callTools makes the tool calls of answer in order, each result added to
// the conversation. It returns true, the run ending with ReasonRepeated,
// at the first call made Options.RepeatLimit times.
func (l *loop) callTools(ctx context.Context, answer llm.Response) (repeated bool) {
	for _, tc := range answer.Message.ToolCalls {
		key := tc.Name + "\x00" + canonical(tc.Arguments)
		l.seen[key]++
		c := Call{Tool: tc.Name, Arguments: tc.Arguments}
		if l.seen[key] >= l.opts.RepeatLimit {
			l.res.Calls = append(l.res.Calls, c)
			l.res.Reason = ReasonRepeated
			return true
		}
		var content string
		if !json.Valid([]byte(tc.Arguments)) && strings.TrimSpace(tc.Arguments) != "" {
			c.Error = "invalid JSON arguments"
			content = badArguments(tc, answer)
		} else {
			l.seq++
			content = runTool(ctx, l.toolHost, l.seq, l.tools, tc, &c, l.opts)
		}
		l.res.Calls = append(l.res.Calls, c)
		l.msgs = append(l.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: content})
	}
	return false
}

// askModel sends req as call *seq+1 of host, asking again after a
// transient error up to retries times.
func askModel(ctx context.Context, host driver.Host, seq *uint64, req json.RawMessage, retries int) (json.RawMessage, error) {
	switch {
	case retries == 0:
		retries = 2
	case retries < 0:
		retries = 0
	}
	for try := 0; ; try++ {
		*seq++
		out, err := host.Do(ctx, driver.Call{Seq: *seq, Driver: llm.Driver, Op: llm.OpComplete, Request: req})
		if err == nil || !llm.Transient(err) || try >= retries || ctx.Err() != nil {
			return out, err
		}
		wait := llm.RetryAfter(err)
		if wait <= 0 {
			wait = time.Second << try
		}
		t := time.NewTimer(min(wait, 30*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// cutOffNote says that answer stopped at the token cap.
func cutOffNote(answer llm.Response) string {
	return fmt.Sprintf("Your answer was cut off at %d tokens (the max_tokens cap)", answer.Usage.CompletionTokens)
}

// badArguments is what a model is told of a call whose arguments are not
// JSON: a message it can act on, not a decoder's.
func badArguments(tc llm.ToolCall, answer llm.Response) string {
	var err error = json.Unmarshal([]byte(tc.Arguments), new(any))
	msg := fmt.Sprintf("error: the arguments of %s are not valid JSON (%v): send one JSON object matching its parameters", tc.Name, err)
	if answer.CutOff() {
		msg = "error: " + cutOffNote(answer) + " in the middle of the arguments of " + tc.Name + ": call it again with shorter arguments"
	}
	return msg
}

// runTool runs one call as call seq of host (CallTool, journaled when the
// run is), under its "execute_tool {name}" span, and returns what goes
// back to the model.
func runTool(ctx context.Context, host driver.Host, seq uint64, tools map[string]kerneltool.Tool, tc llm.ToolCall, c *Call, opts Options) (content string) {
	name, start := telemetry.ToolSpan(tc.Name, tc.ID, telemetry.ToolTypeFunction)
	ctx, span := opts.Tracer.Start(ctx, name, start...)
	defer func() {
		if opts.CaptureContent {
			span.SetAttributes(telemetry.ToolCallArguments.String(telemetry.Content(tc.Arguments)), telemetry.ToolCallResult.String(telemetry.Content(content)))
		}
		if c.Error != "" {
			typ := "tool_error"
			if c.Error == "unknown tool" {
				typ = "unknown_tool"
			}
			telemetry.FailContent(span, typ, errors.New(c.Error), opts.CaptureContent) // the text only with content
		}
		span.End()
	}()
	if _, ok := tools[tc.Name]; !ok {
		c.Error = "unknown tool"
		return fmt.Sprintf("error: there is no tool %q; use one of the tools you were given", tc.Name)
	}
	out, err := host.Do(ctx, driver.Call{Seq: seq, Driver: ToolDriver, Op: tc.Name, Request: toolArgs(tc.Arguments)})
	if err != nil {
		c.Error = err.Error()
		return "error: " + c.Error
	}
	s := string(out)
	if max := opts.MaxResultBytes; len(s) > max {
		c.Truncated = true
		s = s[:max] + fmt.Sprintf("\n[truncated: %d more bytes; ask for less, e.g. a narrower query or a LIMIT]", len(out)-max)
	}
	return s
}

// CallTool calls the kernel tool t for a model, with p (nil: none)
// between them: the arguments are restored first when t is exec_sql and
// pii.restore_to covers "sql" (exec_sql is the sql driver's door for a
// model); the result is tokenized (JSON), and so is an error's message,
// the values restored being looked for in every encoding first (pii.Echo).
// Every other kernel tool gets the arguments as the model wrote them: a tool
// run by exec_tool sees the tokens, and the drivers it calls restore them
// where allowed.
//
// IMPORTANT: whatever hands kernel tool results to a model (this package's
// loop, an MCP server's tool calls) MUST call tools through CallTool.
func CallTool(ctx context.Context, t kerneltool.Tool, args json.RawMessage, p *pii.Tokenizer) (json.RawMessage, error) {
	var echo pii.Echo // the values restored, looked for in the answer in any encoding
	if t.Name == "exec_sql" && p.Restores(driver.SQLDriver, args) {
		r, e, err := p.RestoreEcho(args)
		if err != nil {
			return nil, err
		}
		args, echo = r, e
	}
	out, err := t.Call(ctx, args)
	if err != nil {
		if p == nil {
			return nil, err
		}
		return nil, piiError{err: err, msg: tokenizeText(p, echo.String(err.Error()))}
	}
	if out, err = p.JSON(echo.JSON(out)); err != nil {
		return nil, fmt.Errorf("the result was dropped: %w", err)
	}
	return out, nil
}

// piiError is a tool's error with its message tokenized; errors.Is and As
// still see the original.
type piiError struct {
	err error
	msg string
}

func (e piiError) Error() string { return e.msg }
func (e piiError) Unwrap() error { return e.err }

// tokenizeText tokenizes s, or says it was dropped.
func tokenizeText(p *pii.Tokenizer, s string) string {
	out, err := p.Text(s)
	if err != nil {
		return "the message was dropped: it held personal data that could not be tokenized: " + err.Error()
	}
	return out
}

// toolArgs is a model's arguments as a driver request: JSON as written, or,
// when the model wrote no JSON, the text as a JSON string (the tool
// refuses it, as before, and the journal can record it).
func toolArgs(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

// canonical normalises JSON arguments so that the same call in another
// key order or spacing counts as a repeat.
func canonical(args string) string {
	var v any
	if json.Unmarshal([]byte(args), &v) != nil {
		return strings.TrimSpace(args)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
