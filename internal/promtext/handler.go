package promtext

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Handler returns an http.Handler serving the metrics of r in the Prometheus
// text exposition format 0.0.4 with Content-Type [ContentType].
//
// Every GET or HEAD request collects once from r with the request's context
// and encodes the result with [Write]; other methods get 405. r MUST be
// registered with a MeterProvider (sdkmetric.WithReader) and MUST use
// cumulative temporality (the ManualReader default). Handler panics if r is
// nil.
//
// Failure: when r cannot collect at all (not registered, shut down, request
// cancelled) the handler answers 503 with the reason. When collection reports
// errors but still returns data (a failing observable callback, for example)
// the data is served and the error logged with log/slog at warning level, as
// are metrics [Write] skipped. The handler is safe for concurrent use.
func Handler(r *sdkmetric.ManualReader) http.Handler {
	if r == nil {
		panic("promtext: Handler called with a nil *sdkmetric.ManualReader; pass the reader registered with the MeterProvider")
	}
	return &handler{reader: r}
}

type handler struct {
	reader *sdkmetric.ManualReader
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "promtext: method "+req.Method+" not allowed; scrape with GET", http.StatusMethodNotAllowed)
		return
	}
	ctx := req.Context()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(ctx, &rm); err != nil {
		if errors.Is(err, sdkmetric.ErrReaderNotRegistered) || errors.Is(err, sdkmetric.ErrReaderShutdown) ||
			errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			http.Error(w, "promtext: cannot collect metrics: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		slog.WarnContext(ctx, "promtext: metrics collection reported errors; serving the data collected", "err", err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, &rm); err != nil { // a bytes.Buffer never fails: only skipped metrics
		slog.WarnContext(ctx, "promtext: metrics left out of the exposition", "err", err)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ContentType)
	hdr.Set("Content-Length", strconv.Itoa(buf.Len()))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes()) // the client went away; nothing to do
}
