package forge

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/journal"

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

// A forge's journal run records the trace id of the forge's span, so that
// the console and agentos trace name the trace a collector holds.
func TestForgeRunRecordsItsTraceID(t *testing.T) {
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	f := &Forge{opts: Options{Journal: j}}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "invoke_agent forge")
	defer span.End()
	run, err := f.journalForge(ctx, "add two numbers", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run.Meta().TraceID, span.SpanContext().TraceID().String(); got != want {
		t.Fatalf("forge run trace id %q, want the span's %q", got, want)
	}
	untraced, err := f.journalForge(context.Background(), "add two numbers", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := untraced.Meta().TraceID; id != "" {
		t.Fatalf("a forge with no span records trace id %q", id)
	}
}
