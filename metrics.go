package agentos

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentos-run/agentos/internal/metricsserver"
)

// MetricsHandler serves the runtime's metrics in the Prometheus exposition
// format (the OpenTelemetry Prometheus exporter on a registry of the
// runtime's own; metric names are listed in docs/RUNTIME.md). It is nil when
// Config.MeterProvider was given (export them your way).
func (rt *Runtime) MetricsHandler() http.Handler {
	if rt.metrics == nil {
		return nil
	}
	return rt.metrics.Handler()
}

// MetricsURL is where Config.MetricsAddr serves the metrics ("" when it is
// not set).
func (rt *Runtime) MetricsURL() string {
	if rt.metricsSv == nil {
		return ""
	}
	return rt.metricsSv.URL()
}

// serveMetrics serves MetricsHandler at http://addr/metrics until Close.
func (rt *Runtime) serveMetrics(addr string) error {
	h := rt.MetricsHandler()
	if h == nil {
		return errors.New("agentos: metrics_addr needs the runtime's own meter provider; do not set Config.MeterProvider, or serve your exporter yourself")
	}
	sv, err := metricsserver.Listen(addr, h, rt.log)
	if err != nil {
		return fmt.Errorf("agentos: %w", err)
	}
	rt.metricsSv = sv
	return nil
}
