package llm_test

import (
	"context"
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
