package agentos

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/approval"
)

// ApprovalsFile is where a tool root keeps its approval requests and
// decisions (package approval), relative to the tool root: its own bbolt
// file, never the journal (which may live in PostgreSQL), so that
// 'agentos approve' can answer even when no node serves the root.
var ApprovalsFile = filepath.Join(StateDir, "approvals.db")

// GovernanceConfig governs forged tools (docs/governance/): the approval
// gate, and the other governance settings beside it.
type GovernanceConfig struct {
	// Approval is the approval gate (see ApprovalConfig). Default: on, for
	// tools rated high or critical, waiting up to 5m.
	Approval ApprovalConfig `json:"approval,omitzero"`
}

// ApprovalConfig is the approval gate (docs/governance/approve.md): a run
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
	return nil
}
