package host

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
	sv, err := metricsserver.Listen(addr, h, rt.log,
		metricsserver.Probe{Path: HealthzPath, Check: rt.healthy},
		metricsserver.Probe{Path: ReadyzPath, Check: rt.ready})
	if err != nil {
		return fmt.Errorf("agentos: %w", err)
	}
	rt.metricsSv = sv
	return nil
}

// The probes Config.MetricsAddr serves next to the metrics.
const (
	// HealthzPath answers 200 while the runtime serves (liveness).
	HealthzPath = "/healthz"
	// ReadyzPath answers 200 while the node can take work: it has started,
	// is not closing and, when clustered, is a member its provider lists
	// (seen in its own topology); 503 with what is missing otherwise.
	ReadyzPath = "/readyz"
)

// healthy is the liveness probe: the runtime has not begun closing.
func (rt *Runtime) healthy() error {
	if rt.closing.Load() {
		return errors.New("closing")
	}
	return nil
}

// ready is the readiness probe (see ReadyzPath).
func (rt *Runtime) ready() error {
	if err := rt.healthy(); err != nil {
		return err
	}
	if !rt.cfg.Cluster.Enabled {
		return nil
	}
	m := rt.Member()
	if m == nil {
		return errors.New("not in the cluster yet")
	}
	st := m.Status()
	for _, mi := range st.Members {
		if mi.Alive && mi.Address == st.Address {
			return nil
		}
	}
	return fmt.Errorf("cluster member %s is not listed by its membership provider (%s) yet: %d member(s) seen", st.Address, orDefault(rt.cfg.Cluster.Provider, "seeds"), len(st.Alive()))
}
