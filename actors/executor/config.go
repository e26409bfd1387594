package executor

import (
	"fmt"
	"time"

	"github.com/agentos-run/agentos/config"
)

// LimitsConfig is the "limits" section of agentos.json: the per-run and
// per-call limits of a tool root. The zero value takes the defaults of
// Limits (5 s, 256 MiB, 1000 frames, 1 MiB) and of the kernel tools' 4 MiB
// of arguments.
type LimitsConfig struct {
	// Timeout is the wall-clock limit, e.g. "5s". Default 5s.
	Timeout config.Duration `json:"timeout,omitzero"`
	// MemoryMB is the memory limit in MiB. Default 256.
	MemoryMB int `json:"memory_mb,omitempty"`
	// MaxCallDepth is the call-stack limit in frames. Default 1000.
	MaxCallDepth int `json:"max_call_depth,omitempty"`
	// MaxOutputBytes bounds result plus logs. Default 1 MiB.
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
	// MaxArgsBytes bounds the JSON arguments of one kernel tool call (an
	// LLM's tool call, `agentos call`, a request on the node socket): larger
	// calls are refused, and charged, before they are read further. The
	// kernel tools apply it, not the executor (the composition root passes
	// it to them). Default 4 MiB (kerneltools.DefaultMaxArgsBytes).
	MaxArgsBytes int `json:"max_args_bytes,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (l LimitsConfig) Validate() error {
	for _, f := range []struct {
		key string
		v   int
	}{{"memory_mb", l.MemoryMB}, {"max_call_depth", l.MaxCallDepth}, {"max_output_bytes", l.MaxOutputBytes}, {"max_args_bytes", l.MaxArgsBytes}} {
		if f.v < 0 {
			return fmt.Errorf("limits must not be negative: limits.%s is %d (0 takes the default)", f.key, f.v)
		}
	}
	return nil
}

// Limits returns the run limits the section stands for (zero fields: the
// executor's defaults).
func (l LimitsConfig) Limits() Limits {
	return Limits{
		Timeout:        time.Duration(l.Timeout),
		MemoryBytes:    int64(l.MemoryMB) << 20,
		MaxCallDepth:   l.MaxCallDepth,
		MaxOutputBytes: l.MaxOutputBytes,
	}
}

// CheckIsolation checks agentos.json's "isolation" key: "" (the
// default), IsolationProcess or IsolationInProcess.
func CheckIsolation(s string) error {
	switch Isolation(s) {
	case "", IsolationProcess, IsolationInProcess:
		return nil
	}
	return fmt.Errorf("isolation %q is not known: use %q (the default: sandbox worker processes) or %q (trusted tools only)", s, IsolationProcess, IsolationInProcess)
}

// CheckConfine checks agentos.json's "confine" key: "" (the default),
// ConfineBestEffort, ConfineRequired or ConfineOff.
func CheckConfine(s string) error {
	switch Confine(s) {
	case "", ConfineBestEffort, ConfineRequired, ConfineOff:
		return nil
	}
	return fmt.Errorf("confine %q is not known: use %q (the default), %q or %q", s, ConfineBestEffort, ConfineRequired, ConfineOff)
}
