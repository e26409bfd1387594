package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentos-run/agentos/journal"
)

// A recorded run's logs and the trace id of its execute_tool span are in
// its journal record, in-process and in a worker; a replay of it is the
// same run (its logs and trace id are not compared).
func TestRecordKeepsLogsAndTraceID(t *testing.T) {
	const tool = "export default (a: { n: number }) => { console.log('n is', a.n); tgp.log('done'); return a.n * 2; };\n"
	for _, mode := range []Isolation{IsolationInProcess, IsolationProcess} {
		t.Run(string(mode), func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer tp.Shutdown(context.Background())
			e := newExec(t, mode, map[string]string{"tools/double.ts": tool}, func(o *Options) { o.TracerProvider = tp })
			j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			res, id, err := Record(context.Background(), e, j, Request{Path: "tools/double.ts", Args: json.RawMessage(`{"n": 21}`)})
			if err != nil || !res.Success {
				t.Fatalf("Record: %v %+v", err, res)
			}
			m, err := j.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Logs) != 2 || m.Logs[0] != "n is 21" || m.Logs[1] != "done" {
				t.Errorf("journaled logs %q, want the run's %q", m.Logs, res.Logs)
			}
			ended := spans.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans, want 1", len(ended))
			}
			if want := ended[0].SpanContext().TraceID().String(); m.TraceID != want {
				t.Errorf("journaled trace id %q, want the span's %q", m.TraceID, want)
			}
			rep, err := Replay(context.Background(), e, j, id, nil)
			if err != nil || !rep.Same || rep.Divergence != nil {
				t.Fatalf("replay of a run with logs and a trace id: %v %+v", err, rep)
			}
		})
	}
}

// Without a tracer (tracing off) a run has no trace id: the journal keeps
// none rather than a made-up one.
func TestRecordWithoutTracingKeepsNoTraceID(t *testing.T) {
	e := newExec(t, IsolationInProcess, map[string]string{"tools/one.ts": "export default () => 1;\n"})
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, id, err := Record(context.Background(), e, j, Request{Path: "tools/one.ts"})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := j.Get(id); m.TraceID != "" {
		t.Errorf("trace id %q with no tracer", m.TraceID)
	}
}
