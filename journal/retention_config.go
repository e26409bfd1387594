package journal

import (
	"fmt"
	"time"
)

// Retention is the "retention" section of agentos.json; it bounds the
// journal: the finished runs beyond any bound are deleted, with the
// payloads and sources only they used, when a runtime starts, every hour
// while it runs, and by 'agentos runs prune'. A run that has not ended (in flight, or waiting for recovery) is
// never deleted. 0 takes the default; -1 lifts the bound.
type Retention struct {
	// KeepDays keeps the runs started in the last N days. Default 30.
	KeepDays int `json:"keep_days,omitempty"`
	// KeepRuns keeps the N most recent runs. Default: no bound.
	KeepRuns int `json:"keep_runs,omitempty"`
	// KeepBytes bounds what the journal stores (runs, calls, payloads,
	// sources), deleting the oldest runs first. Default 1 GiB. The file
	// keeps its size and reuses the space; 'agentos runs prune' compacts
	// it.
	KeepBytes int64 `json:"keep_bytes,omitempty"`
}

// Retention defaults.
const (
	DefaultKeepDays  = 30
	DefaultKeepBytes = 1 << 30
)

// PruneOptions returns the retention settings as PruneOptions.
func (r Retention) PruneOptions() PruneOptions {
	var o PruneOptions
	switch {
	case r.KeepDays == 0:
		o.OlderThan = DefaultKeepDays * 24 * time.Hour
	case r.KeepDays > 0:
		o.OlderThan = time.Duration(r.KeepDays) * 24 * time.Hour
	}
	if r.KeepRuns > 0 {
		o.KeepRuns = r.KeepRuns
	}
	switch {
	case r.KeepBytes == 0:
		o.KeepBytes = DefaultKeepBytes
	case r.KeepBytes > 0:
		o.KeepBytes = r.KeepBytes
	}
	return o
}

// Validate checks the section, naming the key that is wrong.
func (r Retention) Validate() error {
	if r.KeepDays < -1 || r.KeepRuns < -1 || r.KeepBytes < -1 {
		return fmt.Errorf("retention values must be positive, 0 for the default or -1 for no bound")
	}
	return nil
}
