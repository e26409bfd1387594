package forge

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A failed forge's error can quote its spec or a test's output (personal
// data): with content capture off its span's status holds only the
// error.type; with capture on the text too (issue 29, review).
func TestForgeSpanErrorTextOnlyWithCapture(t *testing.T) {
	const secret = "ada.lovelace@example.com"
	for _, capture := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		_, span := tp.Tracer("t").Start(context.Background(), "invoke_agent forge")
		endSpan(span, Result{}, fmt.Errorf("%w: the tests failed: expected %s", ErrGaveUp, secret), capture)
		s := rec.Ended()[0]
		text := s.Status().Description
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				text += " " + kv.Value.Emit()
			}
		}
		if got := strings.Contains(text, secret); got != capture || s.Status().Code != codes.Error {
			t.Fatalf("capture %v: status %v, the error's text on the span %v: %q", capture, s.Status(), got, text)
		}
	}
}
