package kernel

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentos-run/agentos/capability"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

const instrumentation = "github.com/agentos-run/agentos/actors/kernel"

// telemetry instruments the kernel: a span per kernel tool call
// ("agentos.kernel.<tool>") and the metrics
//
//	agentos.kernel.calls          counter of kernel tool calls, by tool and outcome
//	agentos.kernel.call.duration  histogram of their wall time (ms)
//	agentos.kernel.quota.charges  counter of charged amounts, by meter
//	agentos.kernel.refusals       counter of capability refusals
//	agentos.kernel.restarts       counter of supervisor restarts, by child
//	agentos.kernel.exits          counter of process exits, by reason kind
//	agentos.kernel.processes      gauge of live processes
//	agentos.kernel.mailbox.depth  gauge of messages waiting in all mailboxes
type telemetry struct {
	tracer   trace.Tracer
	calls    metric.Int64Counter
	duration metric.Float64Histogram
}

func newTelemetry(k *Kernel, tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentation)
	t := &telemetry{tracer: tp.Tracer(instrumentation)}
	errs := make([]error, 0, 8)
	var err error
	t.calls, err = m.Int64Counter("agentos.kernel.calls", metric.WithDescription("Kernel tool calls, by tool and outcome."))
	errs = append(errs, err)
	t.duration, err = m.Float64Histogram("agentos.kernel.call.duration", metric.WithUnit("ms"), metric.WithDescription("Wall time of kernel tool calls."))
	errs = append(errs, err)
	charges, err := m.Float64Counter("agentos.kernel.quota.charges", metric.WithDescription("Amounts charged to quota accounts, by meter."))
	errs = append(errs, err)
	refusals, err := m.Int64Counter("agentos.kernel.refusals", metric.WithDescription("Capability checks refused."))
	errs = append(errs, err)
	restarts, err := m.Int64Counter("agentos.kernel.restarts", metric.WithDescription("Supervisor decisions after a child failed, by child and action."))
	errs = append(errs, err)
	exits, err := m.Int64Counter("agentos.kernel.exits", metric.WithDescription("Process exits, by reason kind."))
	errs = append(errs, err)
	procs, err := m.Int64ObservableGauge("agentos.kernel.processes", metric.WithDescription("Live processes."))
	errs = append(errs, err)
	depth, err := m.Int64ObservableGauge("agentos.kernel.mailbox.depth", metric.WithDescription("Messages waiting in the mailboxes of all processes."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		all := k.all()
		var sum int64
		for _, p := range all {
			sum += int64(p.Mailbox())
		}
		o.ObserveInt64(procs, int64(len(all)))
		o.ObserveInt64(depth, sum)
		return nil
	}, procs, depth); err != nil {
		return nil, err
	}
	bg := context.Background()
	k.addHook(func(e Event) {
		switch e.Kind {
		case EventCharge:
			charges.Add(bg, e.Amount, metric.WithAttributes(attribute.String("meter", e.Meter)))
		case EventRefused:
			refusals.Add(bg, 1)
		case EventRestart:
			restarts.Add(bg, 1, metric.WithAttributes(attribute.String("child", e.Name)))
		case EventExit:
			kind := e.Reason
			if i := strings.IndexAny(kind, ":"); i >= 0 {
				kind = kind[:i]
			}
			exits.Add(bg, 1, metric.WithAttributes(attribute.String("reason", kind)))
		}
	})
	return t, nil
}

func (t *telemetry) start(ctx context.Context, p *Process, tool string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "agentos.kernel."+tool, trace.WithAttributes(
		attribute.String("agentos.tool", tool),
		attribute.Int64("agentos.pid", int64(p.pid)),
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
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	attrs := metric.WithAttributes(attribute.String("tool", tool), attribute.String("outcome", outcome))
	t.calls.Add(ctx, 1, attrs)
	t.duration.Record(ctx, float64(time.Since(start).Microseconds())/1000, attrs)
}
