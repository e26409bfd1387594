package promtext

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// serve starts Handler(reader) on a loopback server closed at cleanup.
func serve(t *testing.T, reader *sdkmetric.ManualReader) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(reader))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// captureLogs routes slog's default logger into a buffer for the test.
func captureLogs(t *testing.T) *syncBuffer {
	t.Helper()
	buf := &syncBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHandlerServesGolden(t *testing.T) {
	logs := captureLogs(t)
	reader := sdkmetric.NewManualReader()
	recordGolden(t, reader)
	srv := serve(t, reader)

	resp, body := do(t, srv, http.MethodGet)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if body != golden {
		t.Errorf("body differs from golden.\n--- got ---\n%s\n--- want ---\n%s", body, golden)
	}
	if err := validateExposition(body); err != nil {
		t.Error(err)
	}

	resp, body = do(t, srv, http.MethodHead)
	if resp.StatusCode != http.StatusOK || body != "" || resp.Header.Get("Content-Length") != strconv.Itoa(len(golden)) {
		t.Errorf("HEAD: status %d, body %q, Content-Length %q", resp.StatusCode, body, resp.Header.Get("Content-Length"))
	}
	if l := logs.String(); l != "" {
		t.Errorf("unexpected log output: %s", l)
	}
}

func TestHandlerConcurrentScrapes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	recordGolden(t, reader)
	srv := serve(t, reader)
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range bodies {
		wg.Go(func() {
			resp, err := srv.Client().Get(srv.URL)
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			bodies[i] = string(b)
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if b != golden {
			t.Errorf("scrape %d differs from golden:\n%s", i, b)
		}
	}
}

func TestHandlerMethodNotAllowed(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	recordGolden(t, reader)
	resp, body := do(t, serve(t, reader), http.MethodPost)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(body, "scrape with GET") {
		t.Errorf("POST: status %d, Allow %q, body %q", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
}

func TestHandlerCannotCollect(t *testing.T) {
	t.Run("not registered", func(t *testing.T) {
		resp, body := do(t, serve(t, sdkmetric.NewManualReader()), http.MethodGet)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, sdkmetric.ErrReaderNotRegistered.Error()) {
			t.Errorf("status %d, body %q", resp.StatusCode, body)
		}
	})
	t.Run("shut down", func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		resp, body := do(t, serve(t, reader), http.MethodGet)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, sdkmetric.ErrReaderShutdown.Error()) {
			t.Errorf("status %d, body %q", resp.StatusCode, body)
		}
	})
}

func TestHandlerPartialCollection(t *testing.T) {
	logs := captureLogs(t)
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m := mp.Meter("partial")
	c, _ := m.Int64Counter("ok")
	c.Add(ctx, 1)
	_, err := m.Int64ObservableGauge("broken", metric.WithInt64Callback(func(context.Context, metric.Int64Observer) error {
		return errors.New("sensor unplugged")
	}))
	if err != nil {
		t.Fatal(err)
	}
	// A delta reader on the same provider is not involved; add a conflict to
	// see skipped metrics logged too.
	g, _ := m.Int64Gauge("ok_total")
	g.Record(ctx, 9)

	resp, body := do(t, serve(t, reader), http.MethodGet)
	want := "# TYPE ok_total counter\nok_total{otel_scope_name=\"partial\"} 1\n"
	if resp.StatusCode != http.StatusOK || body != want {
		t.Errorf("status %d, body\n%s\nwant\n%s", resp.StatusCode, body, want)
	}
	l := logs.String()
	if !strings.Contains(l, "sensor unplugged") || !strings.Contains(l, "level=WARN") || !strings.Contains(l, "family is already a counter") {
		t.Errorf("logs lack the callback error or the skipped metric:\n%s", l)
	}
}

func TestHandlerNilReaderPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "nil *sdkmetric.ManualReader") {
			t.Errorf("recover() = %v", r)
		}
	}()
	Handler(nil)
}
