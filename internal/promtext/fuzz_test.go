package promtext

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "a", "http.server.duration", "ns:sub", "1abc", "9", "_", "__x", ":", "a-b c", "é", "\xff", "日本", "a\x00b", "{x}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, label := sanitizeName(s), sanitizeLabel(s)
		if !metricNameRE.MatchString(name) {
			t.Fatalf("sanitizeName(%q) = %q, not a valid metric name", s, name)
		}
		if !labelNameRE.MatchString(label) {
			t.Fatalf("sanitizeLabel(%q) = %q, not a valid label name", s, label)
		}
		if sanitizeName(name) != name || sanitizeLabel(label) != label {
			t.Fatalf("sanitizing is not idempotent for %q", s)
		}
		if metricNameRE.MatchString(s) && name != s {
			t.Fatalf("valid metric name %q changed to %q", s, name)
		}
		if labelNameRE.MatchString(s) && label != s {
			t.Fatalf("valid label name %q changed to %q", s, label)
		}
		suffix := unitSuffix(s)
		if suffix != "" && !labelNameRE.MatchString("x_"+suffix) {
			t.Fatalf("unitSuffix(%q) = %q cannot extend a name", s, suffix)
		}
	})
}

// FuzzWrite feeds arbitrary names, units, descriptions, attributes and values
// through Write and checks the result with the independent parser.
func FuzzWrite(f *testing.F) {
	f.Add("agentos.runs", "{run}", "Runs.\n\\", "kind", "to\"ol\n", 1.5, true)
	f.Add("le", "s", "", "le", "", math.NaN(), false)
	f.Add("", "By/s", "\xff", "otel_scope_name", "\xff", math.Inf(-1), true)
	f.Fuzz(func(t *testing.T, name, unit, desc, key, value string, v float64, monotonic bool) {
		attrs := attribute.NewSet(attribute.String(key, value), attribute.String(key+".x", value))
		scope := func(n string) metricdata.ScopeMetrics {
			return metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: n, Version: value}, Metrics: []metricdata.Metrics{
				{Name: name, Unit: unit, Description: desc, Data: metricdata.Sum[float64]{
					IsMonotonic: monotonic, Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.DataPoint[float64]{{Attributes: attrs, Value: v}},
				}},
				{Name: name, Unit: unit, Description: desc, Data: metricdata.Gauge[int64]{
					DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, Value: int64(len(value))}},
				}},
				{Name: name + "_bucket", Unit: unit, Data: metricdata.Histogram[float64]{
					Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.HistogramDataPoint[float64]{{
						Attributes: attrs, Bounds: []float64{v, 1, math.Inf(1)}, BucketCounts: []uint64{1, 2, 3, 4}, Count: 10, Sum: v,
					}},
				}},
			}}
		}
		rm := &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{scope(key), scope(value), scope(key)}}
		out, _ := writeChecked(t, rm) // skipped metrics are fine; invalid output is not
		if out == "" {
			t.Fatal("nothing written")
		}
		if !strings.Contains(out, "# TYPE "+familyName(name, unit, false)) && !strings.Contains(out, "# TYPE "+familyName(name, unit, monotonic)) {
			t.Fatalf("family for %q missing:\n%s", name, out)
		}
	})
}
