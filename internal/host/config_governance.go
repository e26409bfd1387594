package host

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/governance/approval"
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

// ApprovalConfig is the approval gate (docs/GOVERNANCE.md): a run
// of a tool whose check_tool risk is in Levels waits until that version of
// the tool is approved ('agentos approve', Runtime.Approve, an MCP
// client's confirmation). The zero value is the gate on with the defaults.
type ApprovalConfig struct {
	// Off turns the gate off: every tool runs unasked. Default false.
	Off bool `json:"off,omitempty"`
	// Levels are the risk levels needing an approval: any of "low",
	// "medium", "high", "critical". Default ["high", "critical"].
	Levels []string `json:"levels,omitempty"`
	// Rights, when set, limit the gate to runs by callers holding at
	// least one of these rights (e.g. ["write", "fetch", "sql"]): a tool
	// runs with its caller's rights only. Default: every caller.
	Rights []string `json:"rights,omitempty"`
	// Paths, when set, limit the gate to these tools, relative to the
	// tool root: "tools/pay/" a directory, "tools/*.ts" a glob,
	// "tools/x.ts" one tool. Default: every tool.
	Paths []string `json:"paths,omitempty"`
	// Timeout bounds how long a run waits for its approval, then fails
	// with approval_timeout (the request stays pending). Default 5m.
	Timeout Duration `json:"timeout,omitzero"`
}

// Policy is the gate's policy of the configuration.
func (a ApprovalConfig) Policy() approval.Policy {
	return approval.Policy{Off: a.Off, Levels: a.Levels, Rights: a.Rights, Paths: a.Paths, Timeout: time.Duration(a.Timeout)}
}

// validate checks governance (called from Config.validate).
func (g GovernanceConfig) validate(path string) error {
	if err := g.Approval.Policy().Validate("governance.approval"); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, r := range g.Approval.Rights {
		switch r {
		case "read", "write", "exec", "spawn", "fetch", "sql", "llm", "mcp":
		default:
			return fmt.Errorf("%s: governance.approval.rights: %q is not a right: use read, write, exec, spawn, fetch, sql, llm or mcp", path, r)
		}
	}
	return g.Gate.validate(path)
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
	// could not be judged (the replay failed or stopped at a limit, as a
	// version that loops does). Default (absent): true with policy
	// "block", so that a timeout does not let a change through unjudged;
	// false explicitly reports such runs without refusing the write.
	// Ignored with policy "warn".
	BlockOnError *bool `json:"block_on_error,omitempty"`
	// Timeout caps one replay's timeout (its recorded one when shorter).
	// Default "10s".
	Timeout Duration `json:"timeout,omitzero"`
}

// Options is the gate.Options this configuration stands for (Runs 0 is
// gate's "disabled", -1).
func (g GateConfig) Options() gate.Options {
	o := gate.Options{Policy: gate.Policy(g.Policy), Timeout: time.Duration(g.Timeout)}
	if g.BlockOnError != nil {
		b := *g.BlockOnError
		o.BlockOnError = &b
	}
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
