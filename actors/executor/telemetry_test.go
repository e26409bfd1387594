package executor

import (
	"context"
	"testing"

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
