package kernel

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument registers the process table's metrics on mp (nil: the
// OpenTelemetry global):
//
//	agentos.kernel.quota.charges  counter of charged amounts, by meter
//	agentos.kernel.refusals       counter of capability refusals
//	agentos.kernel.restarts       counter of supervisor restarts, by child
//	agentos.kernel.exits          counter of process exits, by reason kind
//	agentos.kernel.processes      gauge of live processes
//	agentos.kernel.mailbox.depth  gauge of messages waiting in all mailboxes
//
// The node (package kerneltools) calls it once at boot; the kernel tools' own
// metrics (calls, durations) are the node's. IMPORTANT: call it at most once
// per MeterProvider: every call adds a hook to the kernel's event stream.
func (k *Kernel) Instrument(mp metric.MeterProvider) error {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentation)
	errs := make([]error, 0, 6)
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
		return err
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
		return err
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
	return nil
}

// instrumentation names the kernel's meter. It stays the actors/kernel
// import path so that dashboards built on it keep working.
const instrumentation = "github.com/agentos-run/agentos/actors/kernel"
