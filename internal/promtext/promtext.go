package promtext

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// ContentType is the Content-Type of the Prometheus text exposition format
// 0.0.4 that [Write] produces and [Handler] serves.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Prometheus metric types, as written on "# TYPE" lines.
const (
	typeCounter   = "counter"
	typeGauge     = "gauge"
	typeHistogram = "histogram"
	typeSummary   = "summary"
)

// Label names the encoder sets itself.
const (
	labelScopeName    = "otel_scope_name"
	labelScopeVersion = "otel_scope_version"
	labelLe           = "le"
	labelQuantile     = "quantile"
)

// Write encodes rm in the Prometheus text exposition format 0.0.4 (see the
// package documentation for the mapping) and writes it to w in a single
// w.Write call. A nil rm writes nothing.
//
// IMPORTANT: data that cannot be exposed correctly is skipped, not written
// wrongly; Write still writes everything else and returns the reasons as
// [*SkippedError] values joined with errors.Join (test with errors.Is against
// [ErrDeltaTemporality] and [ErrConflict]). Such an error does not mean the
// output is invalid. An error from w is returned as well, wrapped.
//
// Write does not modify rm and is safe to call concurrently.
func Write(w io.Writer, rm *metricdata.ResourceMetrics) error {
	var buf bytes.Buffer
	skipped := encode(&buf, rm)
	if buf.Len() == 0 {
		return skipped
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return errors.Join(fmt.Errorf("promtext: writing exposition: %w", err), skipped)
	}
	return skipped
}

// family is one Prometheus metric family being assembled.
type family struct {
	name   string
	typ    string
	help   string
	series map[string][]byte // rendered labels (without le/quantile) → sample lines
}

// encoder assembles families from OpenTelemetry metrics.
type encoder struct {
	families map[string]*family
	skipped  []error
}

func encode(buf *bytes.Buffer, rm *metricdata.ResourceMetrics) error {
	if rm == nil {
		return nil
	}
	e := &encoder{families: map[string]*family{}}

	// The SDK returns scopes in map order; sort them (and metrics within a
	// scope) so that which metric wins a conflict is deterministic.
	scopes := make([]*metricdata.ScopeMetrics, len(rm.ScopeMetrics))
	for i := range rm.ScopeMetrics {
		scopes[i] = &rm.ScopeMetrics[i]
	}
	slices.SortStableFunc(scopes, func(a, b *metricdata.ScopeMetrics) int {
		return cmp.Or(
			cmp.Compare(a.Scope.Name, b.Scope.Name),
			cmp.Compare(a.Scope.Version, b.Scope.Version),
			cmp.Compare(a.Scope.SchemaURL, b.Scope.SchemaURL),
		)
	})
	for _, sm := range scopes {
		metrics := make([]*metricdata.Metrics, len(sm.Metrics))
		for i := range sm.Metrics {
			metrics[i] = &sm.Metrics[i]
		}
		slices.SortStableFunc(metrics, func(a, b *metricdata.Metrics) int { return cmp.Compare(a.Name, b.Name) })
		for _, m := range metrics {
			e.addMetric(sm.Scope, m)
		}
	}

	names := make([]string, 0, len(e.families))
	for name := range e.families {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		f := e.families[name]
		if f.help != "" {
			buf.WriteString("# HELP ")
			buf.WriteString(f.name)
			buf.WriteByte(' ')
			buf.WriteString(escapeHelp(f.help))
			buf.WriteByte('\n')
		}
		buf.WriteString("# TYPE ")
		buf.WriteString(f.name)
		buf.WriteByte(' ')
		buf.WriteString(f.typ)
		buf.WriteByte('\n')
		keys := make([]string, 0, len(f.series))
		for k := range f.series {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			buf.Write(f.series[k])
		}
	}
	return errors.Join(e.skipped...)
}

// metricWriter is the state for writing one OpenTelemetry metric into its
// family.
type metricWriter struct {
	scope  instrumentation.Scope
	f      *family
	dups   int    // series skipped because already written
	dupKey string // labels of the first skipped series
}

func (e *encoder) addMetric(scope instrumentation.Scope, m *metricdata.Metrics) {
	var (
		typ     string
		counter bool
		points  int
		delta   bool
	)
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		typ, counter, points, delta = sumType(d.IsMonotonic), d.IsMonotonic, len(d.DataPoints), d.Temporality == metricdata.DeltaTemporality
	case metricdata.Sum[float64]:
		typ, counter, points, delta = sumType(d.IsMonotonic), d.IsMonotonic, len(d.DataPoints), d.Temporality == metricdata.DeltaTemporality
	case metricdata.Gauge[int64]:
		typ, points = typeGauge, len(d.DataPoints)
	case metricdata.Gauge[float64]:
		typ, points = typeGauge, len(d.DataPoints)
	case metricdata.Histogram[int64]:
		typ, points, delta = typeHistogram, len(d.DataPoints), d.Temporality == metricdata.DeltaTemporality
	case metricdata.Histogram[float64]:
		typ, points, delta = typeHistogram, len(d.DataPoints), d.Temporality == metricdata.DeltaTemporality
	case metricdata.Summary:
		typ, points = typeSummary, len(d.DataPoints)
	default:
		// Exponential histograms (no 0.0.4 representation), nil and
		// unknown aggregations are skipped without an error.
		return
	}
	if points == 0 {
		return
	}
	name := familyName(m.Name, m.Unit, counter)
	if delta {
		e.skip(scope, m, name, "", ErrDeltaTemporality)
		return
	}
	f := e.families[name]
	switch {
	case f == nil:
		f = &family{name: name, typ: typ, help: m.Description, series: map[string][]byte{}}
		e.families[name] = f
	case f.typ != typ:
		e.skip(scope, m, name, fmt.Sprintf("family is already a %s, this metric is a %s", f.typ, typ), ErrConflict)
		return
	case f.help == "":
		f.help = m.Description
	}

	w := &metricWriter{scope: scope, f: f}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		writePoints(w, d.DataPoints)
	case metricdata.Sum[float64]:
		writePoints(w, d.DataPoints)
	case metricdata.Gauge[int64]:
		writePoints(w, d.DataPoints)
	case metricdata.Gauge[float64]:
		writePoints(w, d.DataPoints)
	case metricdata.Histogram[int64]:
		writeHistogram(w, d.DataPoints)
	case metricdata.Histogram[float64]:
		writeHistogram(w, d.DataPoints)
	case metricdata.Summary:
		writeSummary(w, d.DataPoints)
	}
	if w.dups > 0 {
		e.skip(scope, m, name, fmt.Sprintf("%d series already written, first {%s}", w.dups, w.dupKey), ErrConflict)
	}
}

func sumType(monotonic bool) string {
	if monotonic {
		return typeCounter
	}
	return typeGauge
}

func (e *encoder) skip(scope instrumentation.Scope, m *metricdata.Metrics, fam, detail string, reason error) {
	e.skipped = append(e.skipped, &SkippedError{Scope: scope.Name, Metric: m.Name, Family: fam, Detail: detail, Err: reason})
}

// familyName builds the Prometheus family name: sanitized name, unit suffix
// unless already present, and _total for counters.
func familyName(name, unit string, counter bool) string {
	n := sanitizeName(name)
	if counter && len(n) > len("_total") {
		n = strings.TrimSuffix(n, "_total")
	}
	if s := unitSuffix(unit); s != "" && n != s && !strings.HasSuffix(n, "_"+s) {
		n += "_" + s
	}
	if counter {
		n += "_total"
	}
	return n
}

// claim reserves the series with rendered labels key; false means it was
// already written and must be skipped.
func (w *metricWriter) claim(key string) bool {
	if _, dup := w.f.series[key]; dup {
		if w.dups == 0 {
			w.dupKey = key
		}
		w.dups++
		return false
	}
	return true
}

func writePoints[N int64 | float64](w *metricWriter, pts []metricdata.DataPoint[N]) {
	for i := range pts {
		p := &pts[i]
		key := renderLabels(&p.Attributes, w.scope, "")
		if !w.claim(key) {
			continue
		}
		var b []byte
		b = appendSample(b, w.f.name, "", key, "", "", formatNumber(p.Value))
		w.f.series[key] = b
	}
}

func writeHistogram[N int64 | float64](w *metricWriter, pts []metricdata.HistogramDataPoint[N]) {
	for i := range pts {
		p := &pts[i]
		key := renderLabels(&p.Attributes, w.scope, labelLe)
		if !w.claim(key) {
			continue
		}
		var b []byte
		var cum uint64
		for j, bound := range p.Bounds {
			if j < len(p.BucketCounts) {
				cum += p.BucketCounts[j]
			}
			if math.IsNaN(bound) || math.IsInf(bound, 1) {
				continue // the +Inf bucket is written from Count below
			}
			b = appendSample(b, w.f.name, "_bucket", key, labelLe, formatFloat(bound), strconv.FormatUint(cum, 10))
		}
		b = appendSample(b, w.f.name, "_bucket", key, labelLe, "+Inf", strconv.FormatUint(p.Count, 10))
		b = appendSample(b, w.f.name, "_sum", key, "", "", formatNumber(p.Sum))
		b = appendSample(b, w.f.name, "_count", key, "", "", strconv.FormatUint(p.Count, 10))
		w.f.series[key] = b
	}
}

func writeSummary(w *metricWriter, pts []metricdata.SummaryDataPoint) {
	for i := range pts {
		p := &pts[i]
		key := renderLabels(&p.Attributes, w.scope, labelQuantile)
		if !w.claim(key) {
			continue
		}
		var b []byte
		for _, q := range p.QuantileValues {
			b = appendSample(b, w.f.name, "", key, labelQuantile, formatFloat(q.Quantile), formatFloat(q.Value))
		}
		b = appendSample(b, w.f.name, "_sum", key, "", "", formatFloat(p.Sum))
		b = appendSample(b, w.f.name, "_count", key, "", "", strconv.FormatUint(p.Count, 10))
		w.f.series[key] = b
	}
}

// appendSample appends one sample line: name+suffix{labels,extra="extraVal"} value.
// labels is already rendered; extraVal is written unescaped (it is a number).
func appendSample(b []byte, name, suffix, labels, extra, extraVal, value string) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if labels != "" || extra != "" {
		b = append(b, '{')
		b = append(b, labels...)
		if extra != "" {
			if labels != "" {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, `="`...)
			b = append(b, extraVal...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, value...)
	return append(b, '\n')
}

type label struct{ name, value string }

// renderLabels renders the attributes plus scope labels as
// name="value",... sorted by name. reserved is the family's own label (le,
// quantile) that attributes must not take.
func renderLabels(set *attribute.Set, scope instrumentation.Scope, reserved string) string {
	labels := make([]label, 0, set.Len()+2)
	index := make(map[string]int, set.Len())
	for iter := set.Iter(); iter.Next(); { // keys in sorted order
		kv := iter.Attribute()
		name := sanitizeLabel(string(kv.Key))
		if name == labelScopeName || name == labelScopeVersion || (reserved != "" && name == reserved) {
			name = "_" + name
		}
		value := kv.Value.String()
		if i, ok := index[name]; ok {
			labels[i].value += ";" + value
			continue
		}
		index[name] = len(labels)
		labels = append(labels, label{name, value})
	}
	if scope.Name != "" {
		labels = append(labels, label{labelScopeName, scope.Name})
	}
	if scope.Version != "" {
		labels = append(labels, label{labelScopeVersion, scope.Version})
	}
	slices.SortFunc(labels, func(a, b label) int { return cmp.Compare(a.name, b.name) })
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.name)
		b.WriteString(`="`)
		b.WriteString(escapeLabelValue(l.value))
		b.WriteByte('"')
	}
	return b.String()
}

var (
	labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper       = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabelValue makes v valid UTF-8 and escapes \, " and newline.
func escapeLabelValue(v string) string {
	return labelValueEscaper.Replace(strings.ToValidUTF8(v, "\uFFFD"))
}

// escapeHelp makes h valid UTF-8 and escapes \ and newline.
func escapeHelp(h string) string {
	return helpEscaper.Replace(strings.ToValidUTF8(h, "\uFFFD"))
}

// formatNumber writes int64 values exactly and float64 values as
// formatFloat does.
func formatNumber[N int64 | float64](v N) string {
	switch v := any(v).(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return formatFloat(v)
	}
	panic("unreachable")
}

// formatFloat formats f the way the Prometheus client library does: +Inf,
// -Inf, NaN, otherwise the shortest representation that parses back to f.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
