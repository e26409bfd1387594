package promtext

import (
	"errors"
	"fmt"
)

// Reasons a metric is left out of the exposition. [Write] reports each
// skipped metric as a [*SkippedError] wrapping one of these; test with
// errors.Is.
var (
	// ErrDeltaTemporality means a Sum or Histogram used delta temporality.
	// Prometheus counters, gauges and histograms are cumulative: register a
	// reader with cumulative temporality (the ManualReader default) instead of
	// a delta temporality selector.
	ErrDeltaTemporality = errors.New("delta temporality cannot be exposed to Prometheus; use a reader with cumulative temporality (the ManualReader default)")

	// ErrConflict means the metric maps to a family that already exists with
	// another type, or to a series (name and labels) that was already written,
	// which happens when names or attribute keys differ only in characters
	// that sanitization replaces (e.g. "a.b" and "a_b"). Give such instruments
	// or attributes names that stay distinct after sanitization.
	ErrConflict = errors.New("conflicts with an already written family or series; give instruments and attributes names that stay distinct after replacing invalid characters with '_'")
)

// SkippedError reports a metric that [Write] left out of the exposition
// (completely, or some of its series). It wraps [ErrDeltaTemporality] or
// [ErrConflict].
type SkippedError struct {
	// Scope is the instrumentation scope name the metric was recorded under.
	Scope string
	// Metric is the OpenTelemetry metric name.
	Metric string
	// Family is the Prometheus metric family name the metric maps to.
	Family string
	// Detail says what exactly clashed; it may be empty.
	Detail string
	// Err is the reason: ErrDeltaTemporality or ErrConflict.
	Err error
}

// Error implements error.
func (e *SkippedError) Error() string {
	msg := fmt.Sprintf("promtext: skipped metric %q of scope %q (family %q)", e.Metric, e.Scope, e.Family)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns Err so errors.Is matches the sentinel reason.
func (e *SkippedError) Unwrap() error { return e.Err }
