package executor

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Each run is a span with its outcome, and is counted by outcome.
func TestTelemetry(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())

	e := newExec(t, IsolationInProcess, map[string]string{
		"tools/math/fib.ts": fibTool, "a.txt": "A",
		"tools/read.ts":   "export default () => tgp.read_file('a.txt');\n",
		"tools/freeze.ts": "export default () => { for (;;) {} };\n",
	}, func(o *Options) { o.TracerProvider, o.MeterProvider = tp, mp })
	run(t, e, "tools/math/fib.ts", `{"n": 5}`)
	run(t, e, "tools/read.ts", `{}`)
	e.Exec(context.Background(), Request{Path: "tools/freeze.ts", Limits: Limits{Timeout: 20e6}})

	ended := spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans, want 3", len(ended))
	}
	attr := func(s sdktrace.ReadOnlySpan, k string) attribute.Value {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == k {
				return kv.Value
			}
		}
		return attribute.Value{}
	}
	if s := ended[0]; s.Name() != "execute_tool tools/math/fib.ts" || attr(s, "agentos.tool").AsString() != "tools/math/fib.ts" || attr(s, "agentos.outcome").AsString() != "ok" || attr(s, "agentos.tool.hash").AsString() == "" {
		t.Fatalf("first span: %s %v", s.Name(), s.Attributes())
	}
	if s := ended[1]; attr(s, "agentos.calls").AsInt64() != 1 {
		t.Fatalf("calls attribute: %v", s.Attributes())
	}
	if s := ended[2]; s.Status().Code != codes.Error || attr(s, "agentos.outcome").AsString() != "timeout" {
		t.Fatalf("timeout span: %v %v", s.Status(), s.Attributes())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	byOutcome := map[string]int64{}
	var calls int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "agentos.tool.runs":
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					o, _ := dp.Attributes.Value("outcome")
					byOutcome[o.AsString()] += dp.Value
				}
			case "agentos.tool.calls":
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					calls += dp.Value
				}
			}
		}
	}
	if byOutcome["ok"] != 2 || byOutcome["timeout"] != 1 || calls != 1 {
		t.Fatalf("runs by outcome %v, calls %d", byOutcome, calls)
	}
}

// A run in a sandbox worker process is one span of its caller's trace, and
// every driver call the worker makes is answered, in the parent, under
// that span: a driver's own spans (a model call's "chat" span) are its
// children, so a tool run across the process boundary stays one trace.
func TestWorkerRunJoinsTheCallersTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	var mu sync.Mutex
	var seen []trace.SpanContext
	probe := driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, trace.SpanContextFromContext(ctx))
		mu.Unlock()
		return json.RawMessage(`"seen"`), nil
	})
	e := newExec(t, IsolationProcess, map[string]string{"tools/probe.ts": "export default () => tgp.probe();\n"}, func(o *Options) {
		o.TracerProvider = tp
		o.Devices = map[string]driver.Device{"probe": probe}
		o.Bindings = []Binding{{Name: "probe", Driver: "probe", Op: "probe"}}
	})
	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	res := e.Exec(ctx, Request{Path: "tools/probe.ts", Args: json.RawMessage(`{}`)})
	caller.End()
	wantResult(t, res, `"seen"`)
	var runSpan sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "execute_tool tools/probe.ts" {
			runSpan = s
		}
	}
	if runSpan == nil || runSpan.Parent().SpanID() != caller.SpanContext().SpanID() || runSpan.SpanContext().TraceID() != caller.SpanContext().TraceID() {
		t.Fatalf("the run's span is not the caller's child: %v", runSpan)
	}
	if len(seen) != 1 || seen[0].SpanID() != runSpan.SpanContext().SpanID() || seen[0].TraceID() != caller.SpanContext().TraceID() {
		t.Fatalf("the worker's driver call was answered under %v, want the run's span %v", seen, runSpan.SpanContext())
	}
}
