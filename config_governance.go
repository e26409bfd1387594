package agentos

import (
	"context"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/vfs"
)

// GovernanceConfig governs forged tools (docs/governance/): each part of
// the governance has its own sub-object. The zero value is the documented
// defaults.
type GovernanceConfig struct {
	// Gate is the registration gate: when a tool changes, the recorded
	// runs of its previous version are replayed against the new one (see
	// GateConfig and docs/governance/gate.md).
	Gate GateConfig `json:"gate,omitzero"`
}

// GateConfig configures the registration gate. The zero value replays the
// 5 most recent runs of the previous version and warns (the write lands
// with the report).
type GateConfig struct {
	// Runs is how many of the previous version's most recent recorded runs
	// are replayed against the new version. Default 5; 0 disables the gate.
	Runs *int `json:"runs,omitempty"`
	// Policy is "warn" (default: the write lands, the report goes with the
	// reply) or "block" (a write whose gate finds a run with a different
	// result or a divergence is refused: nothing is written, registered or
	// committed).
	Policy string `json:"policy,omitempty"`
	// BlockOnError, with policy "block", also refuses a write when a run
	// could not be judged (the replay failed or stopped at a limit).
	// Default false.
	BlockOnError bool `json:"block_on_error,omitempty"`
	// Timeout caps one replay's timeout (its recorded one when shorter).
	// Default "10s".
	Timeout Duration `json:"timeout,omitzero"`
}

// Options is the gate.Options this configuration stands for (Runs 0 is
// gate's "disabled", -1).
func (g GateConfig) Options() gate.Options {
	o := gate.Options{Policy: gate.Policy(g.Policy), BlockOnError: g.BlockOnError, Timeout: time.Duration(g.Timeout)}
	if g.Runs != nil {
		o.Runs = *g.Runs
		if o.Runs == 0 {
			o.Runs = -1
		}
	}
	return o
}

func (g GateConfig) validate(path string) error {
	if g.Runs != nil && *g.Runs < 0 {
		return fmt.Errorf("%s: governance.gate.runs %d must be 0 (no gate) or more (default %d)", path, *g.Runs, gate.DefaultRuns)
	}
	switch g.Policy {
	case "", string(gate.PolicyWarn), string(gate.PolicyBlock):
	default:
		return fmt.Errorf("%s: governance.gate.policy %q is not known: use \"warn\" (the write lands with the report) or \"block\" (a changed run refuses it)", path, g.Policy)
	}
	if g.Timeout < 0 {
		return fmt.Errorf("%s: governance.gate.timeout must be positive", path)
	}
	return nil
}

// CheckAgainstRuns replays the most recent recorded runs of the previous
// version of the tool at path against newSrc, offline, and returns the
// gate's report; nothing is written. n is how many runs (0:
// governance.gate.runs, else 5). The previous version is the file at path
// when its content differs from newSrc (what a write_file of newSrc would
// replace, and be gated against), else the newest version of path the
// journal recorded runs of (gate.PreviousHash): a file already edited in
// place is checked against the version that ran before. It is what
// 'agentos check --against-runs' does; Report.Blocked says whether the
// policy would refuse such a write.
func (rt *Runtime) CheckAgainstRuns(ctx context.Context, path string, newSrc []byte, n int) (gate.Report, error) {
	opts := rt.cfg.Governance.Gate.Options()
	if n > 0 {
		opts.Runs = n
	} else if !opts.Enabled() {
		opts.Runs = 0 // asked for explicitly: the default count
	}
	g, err := gate.New(rt.ex, rt.j, opts)
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
