package executor

import "github.com/agentos-run/agentos/journal"

// JournalLimits is l as the journal records it with a run (RunMeta.Limits).
func JournalLimits(l Limits) *journal.Limits {
	return &journal.Limits{Timeout: l.Timeout, MemoryBytes: l.MemoryBytes, MaxCallDepth: l.MaxCallDepth, MaxOutputBytes: l.MaxOutputBytes}
}

// RecordedLimits returns the limits run meta executed under, and whether
// they were recorded: a run recorded before agentos kept its limits has
// none, and the zero Limits is returned (an executor fills it with its
// defaults).
func RecordedLimits(meta journal.RunMeta) (Limits, bool) {
	if meta.Limits == nil {
		return Limits{}, false
	}
	l := meta.Limits
	return Limits{Timeout: l.Timeout, MemoryBytes: l.MemoryBytes, MaxCallDepth: l.MaxCallDepth, MaxOutputBytes: l.MaxOutputBytes}, true
}
