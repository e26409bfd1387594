package llm_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// A failed request's "chat" span says why in error.type: the HTTP status
// the server answered (429 here), not the driver's mapped code.
func TestChatSpanOnFailure(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	srv := llmtest.NewServer([]llmtest.Step{{Status: 429, Error: "slow down", RetryAfter: 1}, {Content: "ok"}})
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m1", TracerProvider: tp, MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	if _, err := c.Complete(context.Background(), req); err == nil {
		t.Fatal("the 429 was not an error")
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	failed, ok := spans[0], spans[1]
	if a := attrs(failed); failed.Name() != "chat m1" || a["error.type"].AsString() != "429" || failed.Status().Code != codes.Error || a["gen_ai.request.max_tokens"].AsInt64() != 64 {
		t.Fatalf("failed span: %s %v %v", failed.Name(), failed.Status(), failed.Attributes())
	}
	if a := attrs(ok); a["error.type"].Type() != attribute.INVALID || ok.Status().Code == codes.Error || a["gen_ai.response.id"].AsString() == "" {
		t.Fatalf("answered span: %v %v", ok.Status(), ok.Attributes())
	}
}

// A provider's error can quote the request (a prompt, personal data): with
// content capture off a failed "chat" span's status holds only the stable
// error.type, never the error's text; with capture on the text too (issue
// 29, review: possible PII on spans).
func TestChatSpanErrorTextOnlyWithCapture(t *testing.T) {
	const secret = "ada.lovelace@example.com"
	for _, capture := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		srv := llmtest.NewServer([]llmtest.Step{{Status: 400, Error: "bad message: " + secret}})
		c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m1", TracerProvider: tp, CaptureContent: capture})
		if err != nil {
			t.Fatal(err)
		}
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: secret}}}
		if _, err := c.Complete(context.Background(), req); err == nil {
			t.Fatal("the 400 was not an error")
		}
		srv.Close()
		_ = tp.Shutdown(context.Background())
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%d spans, want 1", len(spans))
		}
		s := spans[0]
		text := s.Status().Description
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				text += " " + kv.Value.Emit()
			}
		}
		if got := strings.Contains(text, secret); got != capture {
			t.Fatalf("capture %v: the error's text on the span is %v: %q", capture, got, text)
		}
		if s.Status().Code != codes.Error {
			t.Fatalf("capture %v: status %v, want an error", capture, s.Status())
		}
	}
}
