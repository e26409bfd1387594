package metricsserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/agentos-run/agentos/internal/metricsserver"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

var quiet = slog.New(slog.DiscardHandler)

const scope = "github.com/agentos-run/agentos/test"

func newMetrics(t *testing.T) *metricsserver.Metrics {
	t.Helper()
	m, err := metricsserver.New(metricsserver.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return m
}

func listen(t *testing.T, h http.Handler) *metricsserver.Server {
	t.Helper()
	s, err := metricsserver.Listen("127.0.0.1:0", h, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// scrape GETs url and parses the answer with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type = %q, want the Prometheus text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

// series returns the metric of family name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		names := make([]string, 0, len(fams))
		for n := range fams {
			names = append(names, n)
		}
		t.Fatalf("no family %s; families: %v", name, names)
	}
	if f.GetType() != typ {
		t.Fatalf("%s is a %v, want a %v", name, f.GetType(), typ)
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no series with labels %v: %v", name, want, f.GetMetric())
	return nil
}

// The exporter's names and labels, as docs/RUNTIME.md lists them: dots to
// underscores, the unit as a suffix, _total on counters, the scope as
// otel_scope_name, attributes as labels; no target_info.
func TestExpositionNamesAndLabels(t *testing.T) {
	m := newMetrics(t)
	meter := m.MeterProvider().Meter(scope)
	calls, _ := meter.Int64Counter("agentos.test.calls", metric.WithDescription("Calls."))
	charges, _ := meter.Float64Counter("agentos.test.quota.charges")
	dur, _ := meter.Float64Histogram("agentos.test.call.duration", metric.WithUnit("ms"))
	live, _ := meter.Int64ObservableGauge("agentos.test.processes")
	if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(live, 3)
		return nil
	}, live); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ok := metric.WithAttributes(attribute.String("tool", "write_file"), attribute.String("outcome", "ok"))
	calls.Add(ctx, 2, ok)
	charges.Add(ctx, 1.5, metric.WithAttributes(attribute.String("meter", "cost_usd")))
	dur.Record(ctx, 12, ok)

	s := listen(t, m.Handler())
	fams := scrape(t, s.URL())
	c := series(t, fams, "agentos_test_calls_total", dto.MetricType_COUNTER, map[string]string{"otel_scope_name": scope, "tool": "write_file", "outcome": "ok"})
	if c.GetCounter().GetValue() != 2 {
		t.Errorf("agentos_test_calls_total = %v, want 2", c.GetCounter().GetValue())
	}
	if h := fams["agentos_test_calls_total"].GetHelp(); h != "Calls." {
		t.Errorf("HELP = %q, want the instrument's description", h)
	}
	q := series(t, fams, "agentos_test_quota_charges_total", dto.MetricType_COUNTER, map[string]string{"meter": "cost_usd"})
	if q.GetCounter().GetValue() != 1.5 {
		t.Errorf("charges = %v, want 1.5", q.GetCounter().GetValue())
	}
	h := series(t, fams, "agentos_test_call_duration_milliseconds", dto.MetricType_HISTOGRAM, map[string]string{"tool": "write_file"})
	if h.GetHistogram().GetSampleCount() != 1 || h.GetHistogram().GetSampleSum() != 12 {
		t.Errorf("histogram = %v, want one sample of 12", h.GetHistogram())
	}
	g := series(t, fams, "agentos_test_processes", dto.MetricType_GAUGE, nil)
	if g.GetGauge().GetValue() != 3 {
		t.Errorf("gauge = %v, want 3", g.GetGauge().GetValue())
	}
	if _, ok := fams["target_info"]; ok {
		t.Error("target_info is exported; it MUST NOT be")
	}
}

// Two Metrics in one process with the same instruments and attributes
// serve their own values only: each has its own registry (with the global
// default one, the second would see both and the scrape would fail with a
// duplicate series).
func TestTwoMetricsDoNotCollide(t *testing.T) {
	ctx := context.Background()
	var urls []string
	for _, n := range []int64{1, 7} {
		m := newMetrics(t)
		c, _ := m.MeterProvider().Meter(scope).Int64Counter("agentos.test.calls")
		c.Add(ctx, n, metric.WithAttributes(attribute.String("tool", "read_file")))
		urls = append(urls, listen(t, m.Handler()).URL())
	}
	for i, want := range []float64{1, 7} {
		fams := scrape(t, urls[i])
		f := fams["agentos_test_calls_total"]
		if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter().GetValue() != want {
			t.Errorf("runtime %d serves %v, want one series of %v", i, f, want)
		}
	}
}

// The server answers GET /metrics only; its address is in URL.
func TestServerRoutes(t *testing.T) {
	m := newMetrics(t)
	s := listen(t, m.Handler())
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), metricsserver.Path) {
		t.Fatalf("URL = %q", s.URL())
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/metrics", http.StatusOK},
		{http.MethodHead, "/metrics", http.StatusOK},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodGet, "/other", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, strings.TrimSuffix(s.URL(), metricsserver.Path)+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

// A busy address is an error naming it; after Shutdown the address is
// free and nothing answers.
func TestListenBusyAndShutdown(t *testing.T) {
	m := newMetrics(t)
	s, err := metricsserver.Listen("127.0.0.1:0", m.Handler(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), metricsserver.Path)
	if _, err := metricsserver.Listen(addr, m.Handler(), quiet); err == nil || !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "metrics_addr "+addr) {
		t.Errorf("Listen on a busy address: %v, want EADDRINUSE naming metrics_addr %s", err, addr)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the server still accepts connections after Shutdown")
	}
}
