package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// scrapeMetrics GETs a runtime's metrics and parses them with the
// Prometheus text parser: the exposition must be valid, not only contain
// the right substrings.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: the exposition does not parse: %v", url, err)
	}
	return fams
}

// findSeries returns the series of family name, of type typ, whose labels
// include want (nil when there is none).
func findSeries(fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil || f.GetType() != typ {
		return nil
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			return m
		}
	}
	return nil
}

// A real runtime's /metrics, scraped over loopback and parsed: the kernel's
// tool runs, supervisor restarts and quota charges appear with their labels
// and values.
func TestMetricsExposition(t *testing.T) {
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", MetricsAddr: "127.0.0.1:0"})
	writeFib(t, rt) // one write_file call: a tool_calls charge
	if out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`)); err != nil {
		t.Fatalf("exec_tool = %s (%v)", out, err)
	}
	// A supervisor process whose child fails once: one restart.
	var starts atomic.Int32
	flaky := func(ctx context.Context, _ *kernel.Process) error {
		if starts.Add(1) == 1 {
			return errors.New("failing once, on purpose")
		}
		<-ctx.Done()
		return nil
	}
	if _, err := rt.Kernel().Spawn(kernel.Supervise(kernel.SupervisorSpec{
		Strategy: supervisor.OneForOne, Intensity: 5, Period: time.Minute,
		Children: []kernel.ChildSpec{{Name: "flaky", Main: flaky}},
	}), kernel.SpawnOptions{Name: "sup", Grants: []capability.Grant{{Right: capability.Spawn}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // a bound against hanging, not a timing assertion
	for starts.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor did not restart its child (%d starts)", starts.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}

	fams := scrapeMetrics(t, rt.MetricsURL())
	kernelScope := map[string]string{"otel_scope_name": "github.com/agentos-run/agentos/actors/kernel"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
		value  float64 // of a counter; -1: any
	}{
		{"agentos_tool_runs_total", dto.MetricType_COUNTER, map[string]string{"otel_scope_name": "github.com/agentos-run/agentos/actors/executor", "outcome": "ok", "isolation": "inprocess"}, 1},
		{"agentos_tool_duration_milliseconds", dto.MetricType_HISTOGRAM, map[string]string{"outcome": "ok", "isolation": "inprocess"}, -1},
		{"agentos_kernel_calls_total", dto.MetricType_COUNTER, with(kernelScope, "tool", "exec_tool", "outcome", "ok"), 1},
		{"agentos_kernel_call_duration_milliseconds", dto.MetricType_HISTOGRAM, with(kernelScope, "tool", "write_file", "outcome", "ok"), -1},
		{"agentos_kernel_restarts_total", dto.MetricType_COUNTER, with(kernelScope, "child", "flaky"), 1},
		{"agentos_kernel_quota_charges_total", dto.MetricType_COUNTER, with(kernelScope, "meter", "tool_calls"), 2},
		{"agentos_kernel_processes", dto.MetricType_GAUGE, kernelScope, -1},
	} {
		m := findSeries(fams, c.name, c.typ, c.labels)
		if m == nil {
			var have []string
			for n, f := range fams {
				if strings.HasPrefix(n, "agentos_") {
					have = append(have, n+" "+f.GetType().String())
				}
			}
			slices.Sort(have)
			t.Errorf("no %v %s with labels %v; the runtime exports:\n%s", c.typ, c.name, c.labels, strings.Join(have, "\n"))
			continue
		}
		if c.value >= 0 && m.GetCounter().GetValue() != c.value {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, m.GetCounter().GetValue(), c.value)
		}
	}
	if m := findSeries(fams, "agentos_kernel_processes", dto.MetricType_GAUGE, kernelScope); m != nil && m.GetGauge().GetValue() < 3 {
		t.Errorf("agentos_kernel_processes = %v, want at least 3 (agent, sup, flaky)", m.GetGauge().GetValue())
	}
	if _, ok := fams["target_info"]; ok {
		t.Error("target_info is exported; the runtime's metrics MUST NOT carry it")
	}
}

// metrics_addr fails the start when the address is busy, and when the
// embedding program brought its own MeterProvider (there is nothing of the
// runtime's own to serve); MetricsHandler is nil then.
func TestMetricsAddrRefused(t *testing.T) {
	busy := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", MetricsAddr: "127.0.0.1:0"})
	addr := strings.TrimSuffix(strings.TrimPrefix(busy.MetricsURL(), "http://"), "/metrics")
	for _, tc := range []struct {
		cfg  host.Config
		want string
	}{
		{host.Config{MetricsAddr: addr}, "metrics_addr " + addr},
		{host.Config{MetricsAddr: "127.0.0.1:0", MeterProvider: sdkmetric.NewMeterProvider()}, "needs the runtime's own meter provider"},
	} {
		tc.cfg.Root, tc.cfg.Isolation, tc.cfg.Logger = t.TempDir(), "inprocess", quiet
		rt, err := host.Start(context.Background(), tc.cfg)
		if err == nil {
			rt.Close()
			t.Errorf("Start(metrics_addr %s) succeeded; want an error containing %q", tc.cfg.MetricsAddr, tc.want)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(metrics_addr %s) = %v; want an error containing %q", tc.cfg.MetricsAddr, err, tc.want)
		}
	}
	own := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", MeterProvider: sdkmetric.NewMeterProvider()})
	if own.MetricsHandler() != nil || own.MetricsURL() != "" {
		t.Error("a runtime with the caller's MeterProvider serves metrics of its own")
	}
}

// Two runtimes in one process export side by side: each serves its own
// counts (each has its own Prometheus registry).
func TestMetricsTwoRuntimes(t *testing.T) {
	a := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", MetricsAddr: "127.0.0.1:0"})
	b := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", MetricsAddr: "127.0.0.1:0"})
	writeFib(t, a)
	writeFib(t, a)
	writeFib(t, b)
	for _, c := range []struct {
		rt   *host.Runtime
		want float64
	}{{a, 2}, {b, 1}} {
		fams := scrapeMetrics(t, c.rt.MetricsURL())
		m := findSeries(fams, "agentos_kernel_calls_total", dto.MetricType_COUNTER, map[string]string{"tool": "write_file", "outcome": "ok"})
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("%s: agentos_kernel_calls_total{tool=write_file} = %v, want %v", c.rt.MetricsURL(), m, c.want)
		}
	}
}
