package promtext_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentos-run/agentos/internal/promtext"
)

func ExampleWrite() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	requests, _ := mp.Meter("example").Int64Counter("http.requests",
		metric.WithDescription("HTTP requests served."), metric.WithUnit("{request}"))
	requests.Add(ctx, 2, metric.WithAttributes(attribute.String("method", "GET")))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	if err := promtext.Write(os.Stdout, &rm); err != nil {
		panic(err)
	}
	// Output:
	// # HELP http_requests_total HTTP requests served.
	// # TYPE http_requests_total counter
	// http_requests_total{method="GET",otel_scope_name="example"} 2
}

func ExampleHandler() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promtext.Handler(reader))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	latency, _ := mp.Meter("example").Float64Histogram("tool.latency",
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	latency.Record(ctx, 0.25)

	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Header.Get("Content-Type"))
	fmt.Print(string(body))
	// Output:
	// text/plain; version=0.0.4; charset=utf-8
	// # TYPE tool_latency_seconds histogram
	// tool_latency_seconds_bucket{otel_scope_name="example",le="0.1"} 0
	// tool_latency_seconds_bucket{otel_scope_name="example",le="1"} 1
	// tool_latency_seconds_bucket{otel_scope_name="example",le="+Inf"} 1
	// tool_latency_seconds_sum{otel_scope_name="example"} 0.25
	// tool_latency_seconds_count{otel_scope_name="example"} 1
}
