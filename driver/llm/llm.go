package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/telemetry"
)

// Driver is the name the LLM device is registered under in a driver.Mux.
const Driver = "llm"

// OpComplete is the device's only operation: one chat completion.
const OpComplete = "complete"

// Environment variables read by New for the zero values of Config.
const (
	// EnvBaseURL holds the default base URL.
	EnvBaseURL = "AGENTOS_LLM_BASE_URL"
	// EnvModel holds the default model.
	EnvModel = "AGENTOS_LLM_MODEL"
	// EnvAPIKey is the default name of the variable holding the API key.
	EnvAPIKey = "AGENTOS_LLM_API_KEY"
)

// DefaultBaseURL is used when neither Config.BaseURL nor AGENTOS_LLM_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultTimeout bounds one request when Config.Timeout is zero.
const DefaultTimeout = 120 * time.Second

// Message roles.
const (
	// RoleSystem sets the model's instructions.
	RoleSystem = "system"
	// RoleDeveloper is OpenAI's newer name for system instructions; other
	// servers MAY not know it (use RoleSystem for portability).
	RoleDeveloper = "developer"
	// RoleUser is the user's (or the agent's caller's) turn.
	RoleUser = "user"
	// RoleAssistant is the model's turn: Response.Message has this role.
	RoleAssistant = "assistant"
	// RoleTool carries a tool's result back, with ToolCallID set.
	RoleTool = "tool"
)

// Config configures a Client. The zero value of every field means its
// default; only the model has none (New fails without one).
type Config struct {
	// BaseURL is the server's API root, e.g. http://127.0.0.1:8080/v1 (the
	// driver appends chat/completions). Empty: $AGENTOS_LLM_BASE_URL, else
	// https://api.openai.com/v1.
	BaseURL string
	// Model names the model, e.g. "gpt-4o-mini" or "qwen2.5-coder". Empty:
	// $AGENTOS_LLM_MODEL.
	Model string
	// APIKeyEnv names the environment variable holding the API key. Empty:
	// "AGENTOS_LLM_API_KEY". The variable MAY be unset for local servers
	// that need no key. IMPORTANT: the key is read from the environment
	// only, once, by New, and never logged nor put in an error.
	APIKeyEnv string
	// Timeout bounds one request, headers and body. Zero: 120 s.
	Timeout time.Duration
	// PriceInPerMTok is the price in USD of a million prompt tokens; 0 =
	// unpriced.
	PriceInPerMTok float64
	// PriceOutPerMTok is the price in USD of a million completion tokens;
	// 0 = unpriced.
	PriceOutPerMTok float64
	// HTTPClient sends the requests. Nil: a fresh http.Client over
	// http.DefaultTransport.
	HTTPClient *http.Client
	// MaxTokens caps every completion whose Request.MaxTokens is 0 (sent
	// as max_tokens). Zero: no cap is sent.
	MaxTokens int
	// ParallelToolCalls, when set, is sent as parallel_tool_calls with
	// every request that offers tools (false asks for one call a turn).
	// Nil: the server's default.
	ParallelToolCalls *bool
	// NoTextToolCalls turns off reading tool calls written as text
	// (Response.CallForm): the zero value reads them, since many servers
	// and small models write their calls that way.
	NoTextToolCalls bool
	// TracerProvider receives a "chat {model}" span per request (the
	// OpenTelemetry GenAI conventions, see package telemetry). nil: the
	// OpenTelemetry global.
	TracerProvider trace.TracerProvider
	// CaptureContent records the request's messages and tool definitions
	// and the answer on the span (gen_ai.input.messages,
	// gen_ai.output.messages). IMPORTANT: off by default: prompts MAY hold
	// personal data (see telemetry.CaptureContent).
	CaptureContent bool
}

// Message is one chat message, in either direction.
//
// The fields of Message, ToolCall, ToolSpec, Request, Response and Usage
// are declared in the order of their JSON names: encoded with
// driver.Marshal, a request or an answer is already in the journal's
// canonical form and is recorded as it comes (TestWireTypesAreCanonical).
type Message struct {
	// Content is the message's text; it MAY be empty for an assistant
	// message that only calls tools.
	Content string `json:"content,omitempty"`
	// Name optionally names the participant (system, developer, user and
	// assistant messages); ignored for tool messages.
	Name string `json:"name,omitempty"`
	// Role is "system", "developer", "user", "assistant" or "tool".
	Role string `json:"role"`
	// ToolCallID ties a "tool" message (a tool's result) to the ToolCall.ID
	// it answers. It is REQUIRED for role "tool".
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one function call requested by the model.
type ToolCall struct {
	// Arguments is the call's arguments as JSON text, as the model wrote
	// it: it MAY be invalid JSON or disagree with the schema, and callers
	// MUST validate it.
	Arguments string `json:"arguments"`
	// ID identifies the call; the tool message answering it carries it as
	// ToolCallID.
	ID string `json:"id"`
	// Name is the function's name, one of the request's ToolSpec names.
	Name string `json:"name"`
}

// ToolSpec declares a function the model may call.
type ToolSpec struct {
	// Description tells the model what the function does and when to call it.
	Description string `json:"description,omitempty"`
	// Name is the function's name (a-z, A-Z, 0-9, _ and -, at most 64).
	Name string `json:"name"`
	// Parameters is the JSON Schema of the arguments object; empty means no
	// parameters. It MUST be a JSON object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Request is one chat completion request.
type Request struct {
	// MaxTokens caps the completion's tokens (sent as max_tokens, which
	// every OpenAI-compatible server understands); 0 = the client's
	// Config.MaxTokens (itself 0: no cap).
	MaxTokens int `json:"max_tokens,omitempty"`
	// Messages is the conversation so far; it MUST NOT be empty.
	Messages []Message `json:"messages"`
	// Temperature is the sampling temperature; nil leaves the server's default.
	Temperature *float64 `json:"temperature,omitempty"`
	// Tools are the functions the model may call.
	Tools []ToolSpec `json:"tools,omitempty"`
}

// Response is the model's answer to a Request.
type Response struct {
	// CallForm says how the model wrote Message.ToolCalls: FormAPI (the
	// tool_calls field), FormHermes, FormMistral or FormJSON (read from the
	// text); empty when it called nothing.
	CallForm string `json:"call_form,omitempty"`
	// FinishReason is the server's reason: "stop", "tool_calls", "length",
	// "content_filter", ...
	FinishReason string `json:"finish_reason"`
	// Message is the assistant's message: Content, ToolCalls or both.
	// Append it to Request.Messages as is to continue the conversation.
	Message Message `json:"message"`
	// Usage is the call's token counts and cost.
	Usage Usage `json:"usage"`
}

// CutOff reports whether the answer stopped at the token cap
// (finish_reason "length"): its text or its calls' arguments MAY be
// incomplete.
func (r Response) CutOff() bool { return r.FinishReason == "length" }

// Usage counts a call's tokens and prices them.
type Usage struct {
	// CompletionTokens is the number of tokens the server wrote.
	CompletionTokens int64 `json:"completion_tokens"`
	// CostUSD is the call's cost from Config's prices; 0 when unpriced.
	CostUSD float64 `json:"cost_usd"`
	// PromptTokens is the number of tokens the server read.
	PromptTokens int64 `json:"prompt_tokens"`
	// TotalTokens is their sum as the server reported it.
	TotalTokens int64 `json:"total_tokens"`
}

// Client is an LLM driver. It is safe for concurrent use.
type Client struct {
	baseURL   string
	model     string
	keyEnv    string
	key       string
	timeout   time.Duration
	priceIn   float64
	priceOut  float64
	maxTokens int
	parallel  *bool
	textCalls bool
	completer openai.ChatCompletionService
	tracer    trace.Tracer
	capture   bool
	provider  string // gen_ai.provider.name
	host      string // server.address
	port      int    // server.port
}

// New returns a Client for cfg, with the defaults described on Config.
// It fails with ErrNoModel when no model is configured and ErrBadBaseURL when
// the base URL is not an absolute http(s) URL. New sends no request.
func New(cfg Config) (*Client, error) {
	c := &Client{
		baseURL:  cfg.BaseURL,
		model:    cfg.Model,
		keyEnv:   cfg.APIKeyEnv,
		timeout:  cfg.Timeout,
		priceIn:  cfg.PriceInPerMTok,
		priceOut: cfg.PriceOutPerMTok,
		parallel: cfg.ParallelToolCalls,
		// textCalls: tool calls written as text are read unless turned off.
		textCalls: !cfg.NoTextToolCalls,
		maxTokens: cfg.MaxTokens,
		tracer:    telemetry.Tracer(cfg.TracerProvider, instrumentation),
		capture:   cfg.CaptureContent,
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("llm: max tokens is %d; it must be positive (or 0 for no cap)", cfg.MaxTokens)
	}
	if c.model == "" {
		c.model = os.Getenv(EnvModel)
	}
	if c.model == "" {
		return nil, fmt.Errorf("%w: set Config.Model or the %s environment variable (and %s for a server other than OpenAI, e.g. http://127.0.0.1:8080/v1)", ErrNoModel, EnvModel, EnvBaseURL)
	}
	if c.baseURL == "" {
		c.baseURL = os.Getenv(EnvBaseURL)
	}
	if c.baseURL == "" {
		c.baseURL = DefaultBaseURL
	}
	u, err := url.Parse(c.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.HasSuffix(u.Host, ":") || u.User != nil {
		return nil, fmt.Errorf("%w: %q is not an http(s) URL without credentials, like http://127.0.0.1:8080/v1 (set Config.BaseURL or %s)", ErrBadBaseURL, redactURL(c.baseURL), EnvBaseURL)
	}
	c.host, c.port = serverOf(c.baseURL)
	c.provider = telemetry.ProviderOf(c.host)
	if c.keyEnv == "" {
		c.keyEnv = EnvAPIKey
	}
	c.key = os.Getenv(c.keyEnv)
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// NewChatCompletionService, unlike openai.NewClient, reads no OPENAI_*
	// environment variable: Config is the only configuration.
	opts := []option.RequestOption{
		option.WithBaseURL(c.baseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if c.key != "" {
		opts = append(opts, option.WithAPIKey(c.key))
	}
	c.completer = openai.NewChatCompletionService(opts...)
	return c, nil
}

// Secrets returns the credentials the client holds (its API key, when one
// is set), so that whoever journals its calls can scrub them by value: a
// server or a proxy MAY echo the key in a successful answer, where the
// client's own error scrubbing never looks. IMPORTANT: register them with
// the journal (journal.Journal.AddSecret) before the first call.
func (c *Client) Secrets() []string {
	if c.key == "" {
		return nil
	}
	return []string{c.key}
}

// Model returns the model the client asks for.
func (c *Client) Model() string { return c.model }

// BaseURL returns the server's API root.
func (c *Client) BaseURL() string { return c.baseURL }

// Complete sends one chat completion request and returns the first choice.
// It sends exactly one HTTP request (no retries), under a "chat {model}"
// span. Errors are *driver.Error; see the package documentation,
// "Failure".
func (c *Client) Complete(ctx context.Context, req Request) (out Response, err error) {
	params, err := c.params(req)
	if err != nil {
		return Response{}, err
	}
	maxTokens := 0
	if params.MaxTokens.Valid() {
		maxTokens = int(params.MaxTokens.Value)
	}
	ctx, span := c.startChat(ctx, req, maxTokens)
	var cc *openai.ChatCompletion
	etype := "" // the server's status, before callError maps it
	defer func() { c.endChat(span, cc, out, etype, err) }()
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var raw *http.Response
	cc, err = c.completer.New(cctx, params, option.WithResponseInto(&raw))
	if err != nil {
		etype = errorType(err)
		return Response{}, c.callError(ctx, cctx, raw, err)
	}
	if cc == nil || len(cc.Choices) == 0 {
		return Response{}, driver.Errorf(driver.CodeIO, "llm %s: the server at %s answered without any choice", c.model, c.baseURL)
	}
	ch := cc.Choices[0]
	out = Response{
		Message:      Message{Role: RoleAssistant, Content: ch.Message.Content},
		FinishReason: ch.FinishReason,
		Usage: Usage{
			PromptTokens:     cc.Usage.PromptTokens,
			CompletionTokens: cc.Usage.CompletionTokens,
			TotalTokens:      cc.Usage.TotalTokens,
		},
	}
	if out.Message.Content == "" && ch.Message.Refusal != "" {
		out.Message.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		call := ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if tc.Type == "custom" {
			call.Name, call.Arguments = tc.Custom.Name, tc.Custom.Input
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, call)
	}
	normalize(&out, req.Tools, c.textCalls)
	if out.Usage.TotalTokens == 0 {
		out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	}
	out.Usage.CostUSD = Cost(out.Usage, c.priceIn, c.priceOut)
	return out, nil
}

// Cost prices u: prompt tokens at in and completion tokens at out, both in
// USD per million tokens.
func Cost(u Usage, in, out float64) float64 {
	return float64(u.PromptTokens)*in/1e6 + float64(u.CompletionTokens)*out/1e6
}

// params translates req into the SDK's request, refusing what the wire
// format cannot carry.
func (c *Client) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.model)}
	if len(req.Messages) == 0 {
		return p, driver.Errorf(driver.CodeInvalid, "llm: the request has no messages (give at least one user message)")
	}
	for i, m := range req.Messages {
		mp, err := messageParam(m)
		if err != nil {
			return p, driver.Errorf(driver.CodeInvalid, "llm: message %d: %v", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for i, t := range req.Tools {
		tp, err := toolParam(i, t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tp)
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens < 0 {
		return p, driver.Errorf(driver.CodeInvalid, "llm: max_tokens is %d; it must be positive (or 0 for no cap)", req.MaxTokens)
	}
	switch {
	case req.MaxTokens > 0:
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	case c.maxTokens > 0:
		p.MaxTokens = openai.Int(int64(c.maxTokens))
	}
	if c.parallel != nil && len(req.Tools) > 0 {
		p.ParallelToolCalls = openai.Bool(*c.parallel)
	}
	return p, nil
}

// toolParam is tool i of a request as the SDK sends it: a function whose
// parameters, when given, are a JSON Schema object.
func toolParam(i int, t ToolSpec) (openai.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return openai.ChatCompletionToolUnionParam{}, driver.Errorf(driver.CodeInvalid, "llm: tool %d has no name", i)
	}
	fd := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fd.Description = openai.String(t.Description)
	}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
			return openai.ChatCompletionToolUnionParam{}, driver.Errorf(driver.CodeInvalid, "llm: tool %q: parameters must be a JSON Schema object: %v", t.Name, errOr(err, "got null"))
		}
		fd.Parameters = schema
	}
	return openai.ChatCompletionFunctionTool(fd), nil
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

func messageParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return u, fmt.Errorf("only assistant messages carry tool_calls, not %q ones", m.Role)
	}
	if m.ToolCallID != "" && m.Role != RoleTool {
		return u, fmt.Errorf("only tool messages carry tool_call_id, not %q ones", m.Role)
	}
	switch m.Role {
	case RoleSystem:
		u = openai.SystemMessage(m.Content)
		if m.Name != "" {
			u.OfSystem.Name = openai.String(m.Name)
		}
	case RoleDeveloper:
		u = openai.DeveloperMessage(m.Content)
		if m.Name != "" {
			u.OfDeveloper.Name = openai.String(m.Name)
		}
	case RoleUser:
		u = openai.UserMessage(m.Content)
		if m.Name != "" {
			u.OfUser.Name = openai.String(m.Name)
		}
	case RoleAssistant:
		return assistantParam(m)
	case RoleTool:
		if m.ToolCallID == "" {
			return u, errors.New("a tool message needs the tool_call_id of the call it answers")
		}
		u = openai.ToolMessage(m.Content, m.ToolCallID)
	default:
		return u, fmt.Errorf("unknown role %q (use system, developer, user, assistant or tool)", m.Role)
	}
	return u, nil
}

// assistantParam is an assistant message with the tool calls it makes
// (each needs an id and a name); its content is sent when it has some or
// makes no call.
func assistantParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	a := openai.ChatCompletionAssistantMessageParam{}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Content)
	}
	if m.Name != "" {
		a.Name = openai.String(m.Name)
	}
	for j, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool call %d needs an id and a name", j)
		}
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: tc.Arguments,
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
}

// callError maps a failed SDK call to a *driver.Error whose text never
// contains the API key.
func (c *Client) callError(parent, cctx context.Context, raw *http.Response, err error) error {
	where := fmt.Sprintf("llm %s at %s", c.model, c.baseURL)
	var e *driver.Error
	var apiErr *openai.Error
	status := 0
	if errors.As(err, &apiErr) {
		status = apiErr.StatusCode
	} else if raw != nil && raw.StatusCode >= 400 {
		status = raw.StatusCode
	}
	switch {
	case status != 0:
		e = c.statusError(where, status, apiErr, raw)
	case parent.Err() != nil:
		e = driver.Errorf(driver.CodeUnavailable, "%s: the call was cancelled: %v", where, parent.Err())
	case cctx.Err() != nil:
		e = driver.Errorf(driver.CodeUnavailable, "%s: no answer within %s (raise llm.timeout in agentos.json, or Config.Timeout in Go)", where, c.timeout)
	case isNetError(err):
		e = driver.Errorf(driver.CodeUnavailable, "%s: cannot reach the server: %v", where, err)
	default:
		e = driver.Errorf(driver.CodeIO, "%s: %v", where, err)
	}
	e.Message = c.scrub(e.Message)
	return e
}

// statusError is the error of a call the server answered with an error
// status, saying what to do about it: a rate limit and a server failure
// are unavailable (try again), the rest invalid requests.
func (c *Client) statusError(where string, status int, apiErr *openai.Error, raw *http.Response) *driver.Error {
	msg := http.StatusText(status)
	if apiErr != nil && apiErr.Message != "" {
		msg = apiErr.Message
	}
	detail := fmt.Sprintf("%s: the server answered %d: %s", where, status, msg)
	switch {
	case status == http.StatusTooManyRequests:
		ra := ""
		if raw != nil {
			ra = raw.Header.Get("Retry-After")
		}
		if ra == "" {
			ra = "unspecified"
		}
		return driver.Errorf(driver.CodeUnavailable, "%s (rate limited; retry after %s s)", detail, ra)
	case status >= 500:
		return driver.Errorf(driver.CodeUnavailable, "%s (the server failed; try again later)", detail)
	case (status == http.StatusUnauthorized || status == http.StatusForbidden) && c.key == "":
		return driver.Errorf(driver.CodeInvalid, "%s (no API key was sent: $%s is not set)", detail, c.keyEnv)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return driver.Errorf(driver.CodeInvalid, "%s (check the API key in $%s)", detail, c.keyEnv)
	case status == http.StatusNotFound:
		return driver.Errorf(driver.CodeInvalid, "%s (check the model name and that the base URL ends in /v1)", detail)
	}
	return driver.Errorf(driver.CodeInvalid, "%s", detail)
}

func isNetError(err error) bool {
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.As(err, &oe)
}

// scrub removes the API key from s: a server or a proxy MAY echo it.
func (c *Client) scrub(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "[redacted]")
}

// redactURL hides a password in a URL so that it is safe in an error.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if err != nil {
			return "(unparsable URL)"
		}
		return s
	}
	return u.Redacted()
}
