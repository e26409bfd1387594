package forge

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentos-run/agentos/telemetry"
)

// instrumentation is the OpenTelemetry scope of the forge's spans.
const instrumentation = "github.com/agentos-run/agentos/actors/forge"

// AgentName is the gen_ai.agent.name of a forge's span: a forge is an
// agent that writes a tool ("invoke_agent forge").
const AgentName = "forge"

// startSpan opens the "invoke_agent forge" span of a forge (spec given)
// or of the resumption of run id: the parent of its model calls' ("chat
// {model}") and test runs' ("execute_tool ...") spans.
func (f *Forge) startSpan(ctx context.Context, id, spec string) (context.Context, trace.Span) {
	extra := []attribute.KeyValue{}
	if spec != "" {
		extra = append(extra, attribute.String("agentos.forge.spec_hash", SpecHash(spec)))
	}
	if id != "" {
		extra = append(extra, attribute.Bool("agentos.forge.resumed", true))
	}
	name, opts := telemetry.AgentSpan(AgentName, id, extra...)
	tr := f.tracer
	if tr == nil {
		tr = telemetry.Tracer(nil, instrumentation)
	}
	return tr.Start(ctx, name, opts...)
}

// endSpan records how the forge ended on span and ends it.
func endSpan(span trace.Span, res Result, err error, capture bool) {
	defer span.End()
	attrs := []attribute.KeyValue{
		attribute.Bool("agentos.forge.reused", res.Reused),
		attribute.Int("agentos.forge.attempts", len(res.Attempts)),
		telemetry.UsageInputTokens.Int64(res.Usage.PromptTokens),
		telemetry.UsageOutputTokens.Int64(res.Usage.CompletionTokens),
	}
	if res.RunID != "" {
		attrs = append(attrs, telemetry.AgentID.String(res.RunID))
	}
	if res.Path != "" {
		attrs = append(attrs, attribute.String("agentos.tool", res.Path))
	}
	span.SetAttributes(attrs...)
	telemetry.FailContent(span, errType(err), err, capture)
}

// errType is a failed forge's error.type: the sentinel it wraps.
func errType(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{{ErrSpec, "spec"}, {ErrGaveUp, "gave_up"}, {ErrNoModel, "no_model"}, {ErrCallerGone, "caller_gone"}, {context.Canceled, "cancelled"}} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return ""
}

// traceIDOf is the trace id of ctx's span, "" when it has none (tracing
// off): what the forge's journal run records (journal.RunMeta.TraceID).
func traceIDOf(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}
