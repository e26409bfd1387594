package kerneltools

import (
	"context"
	"errors"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/kerneltool"
	gotel "github.com/agentos-run/agentos/telemetry"
	"github.com/agentos-run/agentos/vfs"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the node's tracer and meter. It stays the
// actors/kernel import path the kernel tools had, so that dashboards built
// on it keep working.
const instrumentation = "github.com/agentos-run/agentos/actors/kernel"

// telemetry instruments the kernel tools: a span per call
// ("agentos.kernel.<tool>") and the metrics
//
//	agentos.kernel.calls          counter of kernel tool calls, by tool and outcome
//	agentos.kernel.call.duration  histogram of their wall time (ms)
//
// plus the process table's own metrics (kernel.Kernel.Instrument).
type telemetry struct {
	capture  bool // record an error's text on its span (Options.CaptureContent)
	tracer   trace.Tracer
	calls    metric.Int64Counter
	duration metric.Float64Histogram
}

func newTelemetry(k *kernel.Kernel, tp trace.TracerProvider, mp metric.MeterProvider, capture bool) (*telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentation)
	t := &telemetry{tracer: tp.Tracer(instrumentation), capture: capture}
	errs := make([]error, 0, 2)
	var err error
	t.calls, err = m.Int64Counter("agentos.kernel.calls", metric.WithDescription("Kernel tool calls, by tool and outcome."))
	errs = append(errs, err)
	t.duration, err = m.Float64Histogram("agentos.kernel.call.duration", metric.WithUnit("ms"), metric.WithDescription("Wall time of kernel tool calls."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := k.Instrument(mp); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *telemetry) start(ctx context.Context, p *kernel.Process, tool string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "agentos.kernel."+tool, trace.WithAttributes(
		attribute.String("agentos.tool", tool),
		attribute.Int64("agentos.pid", int64(p.PID())),
	))
}

func (t *telemetry) end(ctx context.Context, span trace.Span, tool string, start time.Time, err error) {
	outcome := "ok"
	var qe *capability.QuotaError
	switch {
	case err == nil:
	case errors.Is(err, capability.ErrDenied):
		outcome = "denied"
	case errors.As(err, &qe):
		outcome = "quota"
	default:
		outcome = "error"
	}
	// The error's text quotes what the caller sent: on the span only when
	// content capture is on; its kind always.
	gotel.FailContent(span, errKind(err, outcome), err, t.capture)
	span.End()
	attrs := metric.WithAttributes(attribute.String("tool", tool), attribute.String("outcome", outcome))
	t.calls.Add(ctx, 1, attrs)
	t.duration.Record(ctx, float64(time.Since(start).Microseconds())/1000, attrs)
}

// errKind is the stable error.type of a kernel call's error: its
// sentinel's kind, else the outcome.
func errKind(err error, outcome string) string {
	switch {
	case errors.Is(err, kerneltool.ErrInvalidArgs), errors.Is(err, ErrArgsTooLarge):
		return "invalid_args"
	case errors.Is(err, kerneltool.ErrUnknownTool):
		return "unknown_tool"
	case errors.Is(err, vfs.ErrNotFound):
		return "not_found"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return outcome
}

// TracerProvider returns the provider the node's spans go to (nil: the
// OpenTelemetry global), for the agents running on it.
func (n *Node) TracerProvider() trace.TracerProvider { return n.opts.TracerProvider }

// CaptureContent reports whether GenAI content is recorded on the spans
// of the node's agents (Options.CaptureContent).
func (n *Node) CaptureContent() bool { return n.opts.CaptureContent }
