package system

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagator carries the W3C trace context (traceparent, tracestate) in
// message headers, whatever the process-wide OpenTelemetry propagator is.
var propagator = propagation.TraceContext{}

// RequestFuture is sender.RequestFuture that carries ctx's span context
// in the message's headers: the receiving actor, in this process or on
// another node (protoactor's remote sends headers along), continues the
// trace with TraceContext. Without a span in ctx it is sender's own
// RequestFuture.
func RequestFuture(ctx context.Context, sender actor.SenderContext, pid *actor.PID, msg any, timeout time.Duration) *actor.Future {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return sender.RequestFuture(pid, msg, timeout)
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	f := actor.NewFuture(sender.ActorSystem(), timeout)
	sender.Send(pid, &actor.MessageEnvelope{Header: map[string]string(carrier), Message: msg, Sender: f.PID()})
	return f
}

// Send is sender.Send carrying ctx's span context, as RequestFuture.
func Send(ctx context.Context, sender actor.SenderContext, pid *actor.PID, msg any) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		sender.Send(pid, msg)
		return
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	sender.Send(pid, &actor.MessageEnvelope{Header: map[string]string(carrier), Message: msg})
}

// TraceContext returns parent carrying the span context of the message c
// is receiving (sent with RequestFuture, Ask or Send), as a remote parent:
// the spans the handler starts under it join the sender's trace. parent
// is returned as is when the message carries none.
func TraceContext(parent context.Context, c actor.ReceiverContext) context.Context {
	h := c.MessageHeader()
	if h == nil || h.Length() == 0 {
		return parent
	}
	carrier := propagation.MapCarrier(h.ToMap())
	return propagator.Extract(parent, carrier)
}
