package host

import (
	"context"
	"path/filepath"

	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/vfs"
)

// ApprovalsFile is where a tool root keeps its approval requests and
// decisions (package approval), relative to the tool root: its own bbolt
// file, never the journal (which may live in PostgreSQL), so that
// 'agentos approve' can answer even when no node serves the root.
var ApprovalsFile = filepath.Join(StateDir, "approvals.db")

// GovernanceConfig governs forged tools (docs/GOVERNANCE.md): each part of
// the governance has its own sub-object. The zero value is the documented
// defaults.
type GovernanceConfig struct {
	// Approval is the approval gate (see ApprovalConfig). Default: on, for
	// tools rated high or critical, waiting up to 5m.
	Approval ApprovalConfig `json:"approval,omitzero"`
	// Gate is the registration gate: when a tool changes, the recorded
	// runs of its previous version are replayed against the new one (see
	// GateConfig and docs/GOVERNANCE.md).
	Gate GateConfig `json:"gate,omitzero"`
}

// Validate checks governance.approval, then governance.gate.
func (g GovernanceConfig) Validate() error {
	if err := g.Approval.Validate(); err != nil {
		return err
	}
	return g.Gate.Validate()
}

// CheckAgainstRuns replays the most recent recorded runs of the previous
// version of the tool at path against newSrc, offline, and returns the
// gate's report; nothing is written. n is how many runs (0:
// governance.gate.runs, else 5). The previous version is the file at path
// when its content differs from newSrc (what a write_file of newSrc would
// replace, and be gated against, including the fall back to the newest
// earlier version with runs when that one never ran), else the newest
// version of path the journal recorded runs of (gate.PreviousHash): a file
// already edited in place is checked against the version that ran before.
// It is what
// 'agentos check --against-runs' does; Report.Blocked says whether the
// policy would refuse such a write.
func (rt *Runtime) CheckAgainstRuns(ctx context.Context, path string, newSrc []byte, n int) (gate.Report, error) {
	opts := rt.cfg.Governance.Gate.Options()
	if n > 0 {
		opts.Runs = n
	} else if !opts.Enabled() {
		opts.Runs = 0 // asked for explicitly: the default count
	}
	g, err := newGate(rt.node.Wiring().Executor, rt.ex.Options().Workers, rt.j, opts)
	if err != nil {
		return gate.Report{}, err
	}
	clean, err := vfs.Clean(path)
	if err != nil {
		return gate.Report{}, err
	}
	if old, err := rt.jail.ReadFile(clean); err == nil && string(old) != string(newSrc) {
		return g.Check(ctx, clean, old, newSrc), nil
	}
	return g.CheckNewest(ctx, clean, newSrc), nil
}
