package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"

	"github.com/openai/openai-go/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/telemetry"
)

// instrumentation is the OpenTelemetry scope of the model calls' spans.
const instrumentation = "github.com/agentos-run/agentos/driver/llm"

// startChat opens the "chat {model}" span of one request (GenAI semantic
// conventions, telemetry.SemconvVersion), a client span: the request's
// attributes, and its messages and tool definitions when content is
// captured.
func (c *Client) startChat(ctx context.Context, req Request, maxTokens int) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		telemetry.OperationName.String(telemetry.OperationChat),
		telemetry.ProviderName.String(c.provider),
		telemetry.RequestModel.String(c.model),
		telemetry.ServerAddress.String(c.host),
	}
	if c.port > 0 {
		attrs = append(attrs, telemetry.ServerPort.Int(c.port))
	}
	if maxTokens > 0 {
		attrs = append(attrs, telemetry.RequestMaxTokens.Int(maxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, telemetry.RequestTemperature.Float64(*req.Temperature))
	}
	if c.capture {
		attrs = append(attrs, telemetry.InputMessages.String(telemetry.Content(inputMessages(req.Messages))))
		if len(req.Tools) > 0 {
			defs, _ := json.Marshal(req.Tools)
			attrs = append(attrs, telemetry.ToolDefinitions.String(telemetry.Content(string(defs))))
		}
	}
	return c.tracer.Start(ctx, telemetry.OperationChat+" "+c.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endChat records the answer (or the failure) on span and ends it.
// etype, when set, is the error.type (else errorType(err)).
func (c *Client) endChat(span trace.Span, cc *openai.ChatCompletion, out Response, etype string, err error) {
	defer span.End()
	if err != nil {
		if etype == "" {
			etype = errorType(err)
		}
		telemetry.FailContent(span, etype, err, c.capture) // a provider's error can quote the request
		return
	}
	attrs := []attribute.KeyValue{
		telemetry.ResponseFinish.StringSlice([]string{out.FinishReason}),
		telemetry.UsageInputTokens.Int64(out.Usage.PromptTokens),
		telemetry.UsageOutputTokens.Int64(out.Usage.CompletionTokens),
	}
	if cc != nil {
		if cc.ID != "" {
			attrs = append(attrs, telemetry.ResponseID.String(cc.ID))
		}
		if cc.Model != "" {
			attrs = append(attrs, telemetry.ResponseModel.String(cc.Model))
		}
	}
	if c.capture {
		attrs = append(attrs, telemetry.OutputMessages.String(telemetry.Content(outputMessages(out))))
	}
	span.SetAttributes(attrs...)
}

// errorType is a failed call's error.type: the HTTP status the server
// answered, else the driver error's code.
func errorType(err error) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode != 0 {
		return strconv.Itoa(apiErr.StatusCode)
	}
	var de *driver.Error
	if errors.As(err, &de) && de.Code != "" {
		return de.Code
	}
	return telemetry.ErrorTypeOther
}

// serverOf splits the base URL into server.address and server.port (0:
// the scheme's default).
func serverOf(base string) (host string, port int) {
	u, err := url.Parse(base)
	if err != nil {
		return "", 0
	}
	port, _ = strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	return u.Hostname(), port
}

// part is one part of a GenAI message (the semantic conventions' input
// and output messages JSON schemas).
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"response,omitempty"`
}

type genaiMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// parts converts m to GenAI message parts.
func parts(m Message) []part {
	ps := []part{}
	switch {
	case m.Role == RoleTool:
		return append(ps, part{Type: "tool_call_response", ID: m.ToolCallID, Result: m.Content})
	case m.Content != "":
		ps = append(ps, part{Type: "text", Content: m.Content})
	}
	for _, tc := range m.ToolCalls {
		args := json.RawMessage(tc.Arguments)
		if !json.Valid(args) {
			args, _ = json.Marshal(tc.Arguments)
		}
		ps = append(ps, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return ps
}

// inputMessages is gen_ai.input.messages: the request's messages as JSON.
func inputMessages(msgs []Message) string {
	out := make([]genaiMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, genaiMessage{Role: m.Role, Parts: parts(m)})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// outputMessages is gen_ai.output.messages: the answer as JSON.
func outputMessages(r Response) string {
	b, _ := json.Marshal([]genaiMessage{{Role: RoleAssistant, Parts: parts(r.Message), FinishReason: r.FinishReason}})
	return string(b)
}
