package journal

import (
	"fmt"
	"time"
)

// Limits are the resource limits a tool run executed under, recorded with
// the run (RunMeta.Limits) when it begins. They shape its outcome (a run
// that needs 60 s fails at 5 s), so recovery and replay MUST run it under
// the same ones unless the user overrides them.
//
// IMPORTANT: a run recorded before agentos kept its limits has none (nil):
// recovery and replay then use the tool root's defaults and say so.
type Limits struct {
	// Timeout is the run's wall-clock limit.
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	// MemoryBytes is its memory limit.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// MaxCallDepth is its call-stack limit in frames.
	MaxCallDepth int `json:"max_call_depth,omitempty"`
	// MaxOutputBytes bounds its result plus logs.
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
}

// String renders the limits as a user reads them.
func (l Limits) String() string {
	return fmt.Sprintf("timeout %v, memory %d MiB, call depth %d, output %d bytes", l.Timeout, l.MemoryBytes>>20, l.MaxCallDepth, l.MaxOutputBytes)
}

// SetLimits records the limits the run executes under from now on (a
// resumed run's, when the user overrode the recorded ones). It is committed
// with the run's next metadata write (Rehost, End).
func (r *Run) SetLimits(l *Limits) { r.meta.Limits = l }
