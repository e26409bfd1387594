package metricsserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Path is where a [Server] serves the metrics.
const Path = "/metrics"

// Options configures [New]. The zero value is valid.
type Options struct {
	// Logger receives scrape errors at warning level. nil: slog.Default().
	Logger *slog.Logger
}

// Metrics is a MeterProvider whose metrics a Prometheus handler serves.
// Its methods are safe for concurrent use.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
	handler  http.Handler
}

// New makes a MeterProvider exported by the OpenTelemetry Prometheus exporter
// into a new Prometheus registry (never the global default one), and the
// promhttp handler serving that registry.
func New(opts Options) (*Metrics, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metricsserver: registering the Prometheus exporter: %w", err)
	}
	return &Metrics{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		registry: reg,
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			ErrorHandling: promhttp.ContinueOnError, // serve what was gathered
		}),
	}, nil
}

// MeterProvider is the provider whose instruments [Metrics.Handler] serves.
func (m *Metrics) MeterProvider() *sdkmetric.MeterProvider { return m.provider }

// Registry is the Prometheus registry the metrics are exported into; a caller
// MAY register collectors of its own there (they are served too).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition format, the text
// format 0.0.4 unless the scraper negotiates another one.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Shutdown shuts the MeterProvider down: instruments stop recording and the
// handler serves an empty exposition from then on.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.provider.Shutdown(ctx) }

// Server is an HTTP server answering GET [Path] with a metrics handler.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Probe is a health or readiness check served next to the metrics: GET
// Path answers 200 "ok" when Check returns nil, else 503 and the error's
// text (what is not ready yet). Check MUST be cheap and safe for
// concurrent use: it runs on every request.
type Probe struct {
	Path  string
	Check func() error
}

// handler serves p.
func (p Probe) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := p.Check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err.Error())
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// Listen listens on the TCP address addr (e.g. "127.0.0.1:9464"; port 0
// picks a free one) and serves h at GET [Path], and each probe at GET its
// Path, until [Server.Shutdown]. Other paths answer 404, other methods 405.
func Listen(addr string, h http.Handler, log *slog.Logger, probes ...Probe) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics_addr %s: %w (choose a free address, or \"127.0.0.1:0\" for any port)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, h)
	for _, p := range probes {
		mux.Handle("GET "+p.Path, p.handler())
	}
	s := &Server{ln: ln, done: make(chan struct{}), srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // http.ErrServerClosed after Shutdown
	}()
	return s, nil
}

// URL is where the metrics are served: "http://" + the listening address +
// [Path].
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + Path }

// Shutdown stops accepting scrapes, waits for the ones in flight (bounded by
// ctx) and for the serving goroutine to end.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	return err
}
