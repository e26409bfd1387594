// Package promtext renders OpenTelemetry SDK metrics in the Prometheus text
// exposition format, version 0.0.4, so a runtime can offer a /metrics endpoint
// without depending on the Prometheus client library.
//
// # Usage
//
// Register a [go.opentelemetry.io/otel/sdk/metric.ManualReader] with the
// MeterProvider and serve [Handler] on it:
//
//	reader := sdkmetric.NewManualReader()
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
//	mux.Handle("/metrics", promtext.Handler(reader))
//
// Every request collects once from the reader and answers with
// Content-Type [ContentType]. [Write] is the encoder on its own, for callers
// that already hold a [go.opentelemetry.io/otel/sdk/metric/metricdata.ResourceMetrics].
//
// # Mapping
//
// The mapping follows the OpenTelemetry→Prometheus compatibility conventions:
//
//   - Metric names are sanitized to [a-zA-Z_:][a-zA-Z0-9_:]*: every invalid
//     character (dots included) becomes '_', and a leading digit gets a '_'
//     prefix. Label names are sanitized the same way to [a-zA-Z_][a-zA-Z0-9_]*.
//   - The unit becomes a name suffix unless the name already ends with it:
//     "s" → _seconds, "ms" → _milliseconds, "us" → _microseconds,
//     "ns" → _nanoseconds, "By" → _bytes, "KiBy" → _kibibytes, "%" → _percent,
//     and so on; "X/Y" → _X_per_Y (e.g. "By/s" → _bytes_per_second).
//     "1", the empty unit and annotations in braces ("{request}") add nothing.
//     An unknown unit is appended sanitized to [a-zA-Z0-9_].
//   - A monotonic Sum is a "counter" whose name ends in _total. A
//     non-monotonic Sum and a Gauge are a "gauge". A Histogram is a
//     "histogram" with cumulative name_bucket{le="..."} samples ending with
//     le="+Inf", then name_sum and name_count. A Summary is a "summary" with
//     name{quantile="..."}, name_sum and name_count.
//   - Attributes become labels. Values use the OpenTelemetry non-OTLP string
//     representation ([go.opentelemetry.io/otel/attribute.Value.String]), are
//     made valid UTF-8 and escaped (\\, \", \n). When two attribute keys of a
//     data point sanitize to the same label name, their values are joined with
//     ';' in key order.
//   - Every sample carries otel_scope_name (and otel_scope_version when the
//     scope has one), as the OpenTelemetry Prometheus exporter does, so the
//     same instrument name in two scopes yields distinct series. An attribute
//     whose sanitized key is otel_scope_name, otel_scope_version, or the
//     family's reserved label (le for histograms, quantile for summaries) is
//     renamed with a '_' prefix.
//   - Metrics with the same resulting family name are merged into one family,
//     even across scopes: one "# HELP" (the first non-empty description,
//     escaped; omitted when there is none) and one "# TYPE" line. Families are
//     sorted by name, series within a family by their rendered labels, and
//     labels within a series by name (le and quantile last). The output is
//     therefore byte-for-byte deterministic for the same data.
//   - Numbers are written as Prometheus does: shortest float representation,
//     +Inf, -Inf and NaN; int64 values and counts exactly as integers.
//     Timestamps, exemplars and the resource (target_info) are not written.
//
// # Skipped data
//
// Exponential histograms have no 0.0.4 representation and are skipped
// silently, without an error; so are metrics with no data points. Data that
// would make the exposition wrong is skipped and reported, while everything
// else is still written: delta-temporality Sums and Histograms
// ([ErrDeltaTemporality]; the reader MUST use cumulative temporality, which is
// the ManualReader default), a metric whose family already exists with another
// type, and a series whose name and labels were already written
// ([ErrConflict]). Each skipped metric is reported as a [*SkippedError].
//
// # Failure
//
// [Write] returns the error of the underlying writer, joined with any
// [*SkippedError] values. [Handler] answers 503 when the reader cannot collect at
// all (not registered, shut down, request cancelled), serves partial data and
// logs with log/slog when collection reports callback errors, and logs
// skipped metrics with log/slog at warning level.
package promtext
