package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Provider is a node's own tracer provider, exporting over OTLP in
// batches. Close it (Shutdown) when the node stops: that flushes the spans
// not yet sent.
type Provider struct {
	sdk      *sdktrace.TracerProvider
	protocol string
}

// Start makes the tracer provider c configures, under the environment:
// nil and no error when no exporter is configured (Config.Enabled is
// false): nothing is then dialled, and the node's spans go where they went
// before (the OpenTelemetry global tracer provider). The exporter connects
// lazily: an unreachable collector costs dropped spans (logged by the
// OpenTelemetry error handler), never a failed start.
func Start(ctx context.Context, c Config) (*Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !c.Enabled() {
		return nil, nil
	}
	proto, err := c.protocol()
	if err != nil {
		return nil, err
	}
	exp, err := exporter(ctx, c, proto)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP %s exporter: %w", proto, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", c.serviceName())))
	if err != nil {
		return nil, fmt.Errorf("tracing: the service resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if c.SampleRatio > 0 && os.Getenv(EnvSampler) == "" {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))))
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(opts...), protocol: proto}, nil
}

// exporter makes the OTLP span exporter of proto. c's endpoint is passed
// only when the environment names none, so that the environment wins.
func exporter(ctx context.Context, c Config, proto string) (sdktrace.SpanExporter, error) {
	endpoint := ""
	if os.Getenv(EnvEndpoint) == "" && os.Getenv(EnvTracesEndpoint) == "" {
		endpoint = c.Endpoint
	}
	if proto == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, err
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces" // a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	return otlptracehttp.New(ctx, opts...)
}

// TracerProvider returns the provider to hand the node's components.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.sdk }

// Protocol returns the OTLP protocol in use: "grpc" or "http/protobuf".
func (p *Provider) Protocol() string { return p.protocol }

// ForceFlush sends the spans ended so far, waiting for the collector's
// answer or ctx.
func (p *Provider) ForceFlush(ctx context.Context) error { return p.sdk.ForceFlush(ctx) }

// ShutdownTimeout bounds Shutdown: an unreachable collector delays a
// node's stop (a one-shot command's exit) by at most this long.
const ShutdownTimeout = 3 * time.Second

// Shutdown flushes the spans not yet sent and stops the exporter; it is
// bounded by ctx and ShutdownTimeout. A nil Provider shuts down at once.
// IMPORTANT: call it after the node's components stopped, so that their
// last spans are sent.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	if err := p.sdk.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing: flushing the last spans (is the collector at OTEL_EXPORTER_OTLP_ENDPOINT or tracing.endpoint reachable?): %w", err)
	}
	return nil
}
