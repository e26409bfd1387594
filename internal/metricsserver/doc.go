// Package metricsserver exports a runtime's OpenTelemetry metrics to
// Prometheus: its own SDK MeterProvider, read by the OpenTelemetry Prometheus
// exporter (go.opentelemetry.io/otel/exporters/prometheus) into a Prometheus
// registry of its own, served by client_golang's promhttp handler, and, when
// asked, an HTTP server answering GET /metrics on a TCP address.
//
// # Usage
//
//	m, err := metricsserver.New(metricsserver.Options{Logger: log})
//	// hand m.MeterProvider() to the instrumented packages
//	srv, err := metricsserver.Listen("127.0.0.1:9464", m.Handler(), log)
//	// ... srv.URL() is "http://127.0.0.1:9464/metrics"
//	srv.Shutdown(ctx) // then
//	m.Shutdown(ctx)
//
// # Names
//
// The exporter maps OpenTelemetry names the Prometheus way
// (otlptranslator.UnderscoreEscapingWithSuffixes): dots become '_', a unit
// becomes a suffix ("ms" → _milliseconds), a monotonic counter ends in
// _total, so agentos.kernel.calls is agentos_kernel_calls_total and
// agentos.kernel.call.duration (ms) is
// agentos_kernel_call_duration_milliseconds. Attributes become labels. Every
// series carries the instrumentation scope as otel_scope_name,
// otel_scope_version and otel_scope_schema_url (the last two empty for
// agentos' own scopes). The target_info family (the SDK resource) is not
// exported.
//
// # Lifecycle
//
// IMPORTANT: every [Metrics] has its own registry, never the Prometheus
// global default one, so two runtimes in one process export side by side
// without colliding. A [Server] MUST be shut down before the [Metrics] it
// serves; after [Metrics.Shutdown] the handler serves an empty exposition.
//
// # Failure
//
// [New] fails only when the exporter cannot be registered. [Listen] fails when
// the address cannot be listened on. A scrape during which collection reports
// errors (a failing observable callback) serves the metrics gathered and logs
// the errors at warning level.
package metricsserver
