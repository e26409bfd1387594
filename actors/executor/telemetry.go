package executor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	gotel "github.com/agentos-run/agentos/telemetry"
)

// instrumentation is the OpenTelemetry scope of the executor's spans and
// metrics.
const instrumentation = "github.com/agentos-run/agentos/actors/executor"

// telemetry instruments tool runs: one span per run ("execute_tool
// {path}", the OpenTelemetry GenAI conventions' tool execution, see package
// telemetry, with the agentos.* attributes)
// and three metrics:
//
//	agentos.tool.runs      counter, by outcome ("ok" or the error kind) and isolation
//	agentos.tool.duration  histogram of run wall time in milliseconds, same attributes
//	agentos.tool.calls     counter of driver calls runs made
type telemetry struct {
	tracer   trace.Tracer
	runs     metric.Int64Counter
	duration metric.Float64Histogram
	calls    metric.Int64Counter
	// sets holds the metrics' attribute sets, by outcome and isolation
	// (a handful): built once, not sorted and allocated on every run. At
	// most maxAttrSets are kept (an outcome is an error kind, which a
	// worker reports).
	sets  sync.Map // attrKey -> metric.MeasurementOption
	nsets atomic.Int32
}

// maxAttrSets bounds telemetry.sets.
const maxAttrSets = 64

// attrKey names one of the metrics' attribute sets: outcome "" is the
// calls counter's, by isolation alone.
type attrKey struct{ outcome, iso string }

// attrs returns the metrics' attributes for outcome and isolation iso.
func (t *telemetry) attrs(outcome string, iso Isolation) metric.MeasurementOption {
	k := attrKey{outcome, string(iso)}
	if o, ok := t.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	kv := []attribute.KeyValue{attribute.String("isolation", k.iso)}
	if outcome != "" {
		kv = append(kv, attribute.String("outcome", outcome))
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	if t.nsets.Add(1) > maxAttrSets {
		return o
	}
	kept, _ := t.sets.LoadOrStore(k, o)
	return kept.(metric.MeasurementOption)
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentation)
	t := &telemetry{tracer: gotel.Tracer(tp, instrumentation)}
	var err error
	if t.runs, err = m.Int64Counter("agentos.tool.runs", metric.WithDescription("Tool runs, by outcome (ok or the error kind) and isolation.")); err != nil {
		return nil, err
	}
	if t.duration, err = m.Float64Histogram("agentos.tool.duration", metric.WithUnit("ms"), metric.WithDescription("Wall time of tool runs, transpile included.")); err != nil {
		return nil, err
	}
	if t.calls, err = m.Int64Counter("agentos.tool.calls", metric.WithDescription("Driver calls made by tool runs.")); err != nil {
		return nil, err
	}
	return t, nil
}

// start opens the span of a run.
func (t *telemetry) start(ctx context.Context, req Request, iso Isolation) (context.Context, trace.Span) {
	name, opts := gotel.ToolSpan(req.Path, "", gotel.ToolTypeExtension,
		attribute.String("agentos.tool", req.Path),
		attribute.String("agentos.isolation", string(iso)))
	return t.tracer.Start(ctx, name, opts...)
}

// end records the run's outcome on its span and in the metrics.
func (t *telemetry) end(ctx context.Context, span trace.Span, res execclient.Result, iso Isolation) {
	outcome := "ok"
	if res.Error != nil {
		outcome = string(res.Error.Kind)
		span.SetAttributes(gotel.ErrorType.String(outcome))
		span.SetStatus(codes.Error, res.Error.Message)
	}
	span.SetAttributes(
		attribute.String("agentos.outcome", outcome),
		attribute.String("agentos.tool.hash", res.Hash),
		attribute.Int64("agentos.calls", int64(res.Calls)),
	)
	span.End()
	attrs := t.attrs(outcome, iso)
	t.runs.Add(ctx, 1, attrs)
	t.duration.Record(ctx, float64(res.Duration)/float64(time.Millisecond), attrs)
	t.calls.Add(ctx, int64(res.Calls), t.attrs("", iso))
}
