package promtext

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// recordGolden records the instruments of the golden exposition on a real
// MeterProvider reading into reader.
func recordGolden(t testing.TB, reader *sdkmetric.ManualReader) {
	t.Helper()
	ctx := context.Background()
	expView := sdkmetric.NewView(
		sdkmetric.Instrument{Name: "agentos.latency"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}},
	)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(expView))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	rt := mp.Meter("agentos/runtime", metric.WithInstrumentationVersion("v1.2.0"))
	forge := mp.Meter("agentos/forge")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	attrs := func(kv ...attribute.KeyValue) metric.MeasurementOption { return metric.WithAttributes(kv...) }

	runs, err := rt.Int64Counter("agentos.runs", metric.WithDescription("Runs started."), metric.WithUnit("{run}"))
	must(err)
	runs.Add(ctx, 3, attrs(attribute.String("kind", "tool")))
	runs.Add(ctx, 2, attrs(attribute.String("kind", "forge")))
	forgeRuns, err := forge.Int64Counter("agentos.runs", metric.WithDescription("Runs started."), metric.WithUnit("{run}"))
	must(err)
	forgeRuns.Add(ctx, 7, attrs(attribute.String("kind", "forge")))

	actors, err := rt.Int64UpDownCounter("agentos.actors.active", metric.WithDescription("Live actors."), metric.WithUnit("{actor}"))
	must(err)
	actors.Add(ctx, 5)
	actors.Add(ctx, -2)

	_, err = rt.Float64ObservableGauge("agentos.quota.remaining",
		metric.WithDescription("Remaining quota share per tenant.\nPath: C:\\quota"),
		metric.WithUnit("1"),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			o.Observe(0.25, metric.WithAttributes(attribute.String("tenant.id", "acme"), attribute.Int("tier", 1)))
			o.Observe(math.Inf(1), metric.WithAttributes(attribute.String("tenant.id", "we\"ird\\\nname")))
			o.Observe(math.NaN(), metric.WithAttributes(attribute.String("tenant.id", "nan")))
			return nil
		}))
	must(err)

	size, err := rt.Int64Histogram("agentos.io.size", metric.WithDescription("Size of I/O operations."),
		metric.WithUnit("By"), metric.WithExplicitBucketBoundaries(100, 1000, 1e6))
	must(err)
	for _, v := range []int64{50, 500, 500, 2_000_000} {
		size.Record(ctx, v, attrs(attribute.String("op", "read")))
	}
	size.Record(ctx, 10, attrs(attribute.String("op", "write")))

	dur, err := rt.Float64Counter("agentos.tool.duration", metric.WithDescription("Time spent in tools."), metric.WithUnit("s"))
	must(err)
	dur.Add(ctx, 1.5, attrs(attribute.String("tool", "grep")))
	dur.Add(ctx, 0.25, attrs(attribute.String("tool", "grep")))
	dur.Add(ctx, 0.001, attrs(attribute.String("tool", "ls")))

	// Exponential histogram: skipped without an error.
	lat, err := rt.Float64Histogram("agentos.latency", metric.WithUnit("s"))
	must(err)
	lat.Record(ctx, 0.3)
}

const golden = `# HELP agentos_actors_active Live actors.
# TYPE agentos_actors_active gauge
agentos_actors_active{otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 3
# HELP agentos_io_size_bytes Size of I/O operations.
# TYPE agentos_io_size_bytes histogram
agentos_io_size_bytes_bucket{op="read",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="100"} 1
agentos_io_size_bytes_bucket{op="read",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="1000"} 3
agentos_io_size_bytes_bucket{op="read",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="1e+06"} 3
agentos_io_size_bytes_bucket{op="read",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="+Inf"} 4
agentos_io_size_bytes_sum{op="read",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 2001050
agentos_io_size_bytes_count{op="read",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 4
agentos_io_size_bytes_bucket{op="write",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="100"} 1
agentos_io_size_bytes_bucket{op="write",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="1000"} 1
agentos_io_size_bytes_bucket{op="write",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="1e+06"} 1
agentos_io_size_bytes_bucket{op="write",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",le="+Inf"} 1
agentos_io_size_bytes_sum{op="write",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 10
agentos_io_size_bytes_count{op="write",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 1
# HELP agentos_quota_remaining Remaining quota share per tenant.\nPath: C:\\quota
# TYPE agentos_quota_remaining gauge
agentos_quota_remaining{otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",tenant_id="acme",tier="1"} 0.25
agentos_quota_remaining{otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",tenant_id="nan"} NaN
agentos_quota_remaining{otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",tenant_id="we\"ird\\\nname"} +Inf
# HELP agentos_runs_total Runs started.
# TYPE agentos_runs_total counter
agentos_runs_total{kind="forge",otel_scope_name="agentos/forge"} 7
agentos_runs_total{kind="forge",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 2
agentos_runs_total{kind="tool",otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0"} 3
# HELP agentos_tool_duration_seconds_total Time spent in tools.
# TYPE agentos_tool_duration_seconds_total counter
agentos_tool_duration_seconds_total{otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",tool="grep"} 1.75
agentos_tool_duration_seconds_total{otel_scope_name="agentos/runtime",otel_scope_version="v1.2.0",tool="ls"} 0.001
`

// writeChecked runs Write and checks the output against the independent
// parser in validate_test.go.
func writeChecked(t testing.TB, rm *metricdata.ResourceMetrics) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	err := Write(&buf, rm)
	if verr := validateExposition(buf.String()); verr != nil {
		t.Fatalf("invalid exposition: %v\n%s", verr, buf.String())
	}
	return buf.String(), err
}

func TestWriteGolden(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	recordGolden(t, reader)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got, err := writeChecked(t, &rm)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if got != golden {
		t.Errorf("Write output differs from golden.\n--- got ---\n%s\n--- want ---\n%s", got, golden)
	}
	// Collecting again (new map order inside the SDK) gives the same bytes.
	for range 5 {
		var rm2 metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm2); err != nil {
			t.Fatal(err)
		}
		if again, _ := writeChecked(t, &rm2); again != got {
			t.Fatalf("output not deterministic:\n%s\nvs\n%s", again, got)
		}
	}
}

func TestWriteNilAndEmpty(t *testing.T) {
	for name, rm := range map[string]*metricdata.ResourceMetrics{
		"nil":   nil,
		"empty": {},
		"no points": {ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
			{Name: "x", Data: metricdata.Gauge[int64]{}},
			{Name: "y"}, // nil Data
		}}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := writeChecked(t, rm)
			if err != nil || got != "" {
				t.Fatalf("Write = %q, %v; want empty, nil", got, err)
			}
		})
	}
}

func TestWriteDeltaTemporalitySkipped(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
		return metricdata.DeltaTemporality
	}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m := mp.Meter("delta")
	c, _ := m.Int64Counter("c")
	c.Add(ctx, 1)
	h, _ := m.Float64Histogram("h")
	h.Record(ctx, 1)
	g, _ := m.Int64Gauge("g") // gauges have no temporality: still written
	g.Record(ctx, 4)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got, err := writeChecked(t, &rm)
	if !errors.Is(err, ErrDeltaTemporality) {
		t.Fatalf("err = %v, want ErrDeltaTemporality", err)
	}
	var se *SkippedError
	if !errors.As(err, &se) || se.Scope != "delta" || (se.Metric != "c" && se.Metric != "h") {
		t.Fatalf("err = %#v, want a *SkippedError for c or h in scope delta", se)
	}
	if msg := err.Error(); !strings.Contains(msg, `(family "c_total")`) || !strings.Contains(msg, `(family "h")`) {
		t.Errorf("error %q does not name both skipped families", msg)
	}
	want := "# TYPE g gauge\ng{otel_scope_name=\"delta\"} 4\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteConflicts(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })

	// Same family name, different types, in two scopes: scope "a" sorts
	// first and wins.
	ga, _ := mp.Meter("a").Int64Gauge("jobs")
	ga.Record(ctx, 1)
	hb, _ := mp.Meter("b").Int64Histogram("jobs")
	hb.Record(ctx, 1)

	// Two metrics that sanitize to the same name with the same labels:
	// "q.len" sorts before "q_len" and wins the series.
	q1, _ := mp.Meter("c").Int64Gauge("q.len")
	q1.Record(ctx, 10)
	q2, _ := mp.Meter("c").Int64Gauge("q_len")
	q2.Record(ctx, 20)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got, err := writeChecked(t, &rm)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"jobs" of scope "b"`) || !strings.Contains(msg, "family is already a gauge, this metric is a histogram") ||
		!strings.Contains(msg, `"q_len" of scope "c"`) || !strings.Contains(msg, `1 series already written, first {otel_scope_name="c"}`) {
		t.Errorf("error message lacks detail: %v", msg)
	}
	want := `# TYPE jobs gauge
jobs{otel_scope_name="a"} 1
# TYPE q_len gauge
q_len{otel_scope_name="c"} 10
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteLabels(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	noBuckets := sdkmetric.NewView(sdkmetric.Instrument{Name: "h"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: []float64{}}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(noBuckets))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m := mp.Meter("") // no scope name: no otel_scope_name label

	h, _ := m.Float64Histogram("h")
	h.Record(ctx, 2.5, metric.WithAttributes(
		attribute.String("le", "reserved"),
		attribute.String("otel_scope_name", "spoof"),
		attribute.String("a.b", "1"), attribute.String("a_b", "2"), // collide → joined in key order
		attribute.String("9lives", "cat"),
		attribute.String("bad\xffutf8", "v\xff"),
		attribute.StringSlice("list", []string{"x", "y"}),
		attribute.Bool("ok", true),
		attribute.Float64("ratio", 0.5),
	))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got, err := writeChecked(t, &rm)
	if err != nil {
		t.Fatal(err)
	}
	const labels = `_9lives="cat",_le="reserved",_otel_scope_name="spoof",a_b="1;2",bad_utf8="v` + "\uFFFD" + `",list="[\"x\",\"y\"]",ok="true",ratio="0.5"`
	want := "# TYPE h histogram\n" +
		"h_bucket{" + labels + `,le="+Inf"} 1` + "\n" +
		"h_sum{" + labels + "} 2.5\n" +
		"h_count{" + labels + "} 1\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Summaries only come from bridges (e.g. OpenCensus), not from the SDK's own
// instruments, so this test feeds the data structure directly.
func TestWriteSummary(t *testing.T) {
	rm := &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "bridge"},
		Metrics: []metricdata.Metrics{{
			Name: "rpc.latency", Unit: "ms", Description: "RPC latency.",
			Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
				Attributes:     attribute.NewSet(attribute.String("quantile", "x")),
				Count:          3,
				Sum:            12.5,
				QuantileValues: []metricdata.QuantileValue{{Quantile: 0.5, Value: 4}, {Quantile: 0.99, Value: 7.5}},
			}}},
		}},
	}}}
	got, err := writeChecked(t, rm)
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP rpc_latency_milliseconds RPC latency.
# TYPE rpc_latency_milliseconds summary
rpc_latency_milliseconds{_quantile="x",otel_scope_name="bridge",quantile="0.5"} 4
rpc_latency_milliseconds{_quantile="x",otel_scope_name="bridge",quantile="0.99"} 7.5
rpc_latency_milliseconds_sum{_quantile="x",otel_scope_name="bridge"} 12.5
rpc_latency_milliseconds_count{_quantile="x",otel_scope_name="bridge"} 3
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriteWriterError(t *testing.T) {
	rm := &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
		{Name: "g", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Value: 1}}}},
	}}}}
	boom := errors.New("disk full")
	if err := Write(failWriter{boom}, rm); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping %v", err, boom)
	}
}

func TestFamilyName(t *testing.T) {
	for _, tc := range []struct {
		name, unit string
		counter    bool
		want       string
	}{
		{"http.server.duration", "s", false, "http_server_duration_seconds"},
		{"http.server.duration", "ms", false, "http_server_duration_milliseconds"},
		{"io.read", "By", true, "io_read_bytes_total"},
		{"cpu.utilization", "1", false, "cpu_utilization"},
		{"requests", "1", true, "requests_total"},
		{"requests", "{request}", true, "requests_total"},
		{"requests_total", "", true, "requests_total"},
		{"wait_seconds", "s", false, "wait_seconds"},
		{"wait_seconds_total", "s", true, "wait_seconds_total"},
		{"wait", "s", true, "wait_seconds_total"},
		{"seconds", "s", false, "seconds"},
		{"_total", "", true, "_total_total"},
		{"net.io", "By/s", false, "net_io_bytes_per_second"},
		{"rate", "1/s", false, "rate_per_second"},
		{"rate", "{packet}/s", false, "rate_per_second"},
		{"temp", "Cel", false, "temp_celsius"},
		{"mem", "MiBy", false, "mem_mebibytes"},
		{"ratio", "%", false, "ratio_percent"},
		{"odd", "foo bar", false, "odd_foo_bar"},
		{"odd", "µ", false, "odd"},
		{"1st.metric", "", false, "_1st_metric"},
		{"ns:sub.metric", "", false, "ns:sub_metric"},
		{"", "", false, "_"},
	} {
		if got := familyName(tc.name, tc.unit, tc.counter); got != tc.want {
			t.Errorf("familyName(%q, %q, %v) = %q, want %q", tc.name, tc.unit, tc.counter, got, tc.want)
		}
	}
}

func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-1, "-1"}, {0.1, "0.1"}, {1.5e21, "1.5e+21"}, {1e6, "1e+06"},
		{123456, "123456"}, {1e-7, "1e-07"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"}, {math.MaxFloat64, "1.7976931348623157e+308"},
	} {
		if got := formatFloat(tc.in); got != tc.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := formatNumber(int64(math.MaxInt64)); got != "9223372036854775807" {
		t.Errorf("formatNumber(MaxInt64) = %q", got)
	}
}
