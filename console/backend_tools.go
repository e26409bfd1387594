package console

import (
	"context"
	"time"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/governance/gate"
)

// ToolsBackend is what the Tools pages read: the registry ranked as
// search_tools ranks it, a tool's versions with their diffs, its risk and
// check findings, the runs of each version, and the registration gate's
// last report. IMPORTANT: a tool the principal may not read (capability
// read on its path, as read_file checks it) is never listed nor shown.
type ToolsBackend interface {
	// SearchTools returns the registered tools best matching query, best
	// first (the registry's BM25F ranking, as search_tools), at most limit.
	SearchTools(ctx context.Context, who Principal, query string, limit int) ([]ToolHit, error)
	// Tools lists the registered tools by path, those after the path
	// after ("" from the first), at most limit; Next is the cursor of the
	// next page ("" on the last).
	Tools(ctx context.Context, who Principal, after string, limit int) (ToolPage, error)
	// Tool returns one tool (root-relative path) with every version the
	// journal keeps (read from its index of runs by tool: fast on a large
	// journal); an unknown path wraps ErrNotFound.
	Tool(ctx context.Context, who Principal, path string) (ToolDetail, error)
	// ToolVersion returns one version of the tool (its content hash or a
	// prefix of at least 8 hex digits): its source, its diff against the
	// version before it (or against base when given), and its runs, newest
	// first, those before the run id before, at most limit (Next continues
	// with the next page).
	ToolVersion(ctx context.Context, who Principal, path, hash, base, before string, limit int) (ToolVersionDetail, error)
}

// ToolHit is one search result.
type ToolHit struct {
	ToolInfo
	// Score is how much of the query the tool covers, 0..1.
	Score float64
}

// ToolInfo is a registered tool's entry (the registry's metadata).
type ToolInfo struct {
	Path        string
	Name        string
	Description string
	Tags        []string
	// Hash is the current version's content hash; Version counts its
	// registered versions (1 for the first).
	Hash    string
	Version int
	Usage   int
	Created time.Time
	Updated time.Time
	// Parameters is the JSON Schema of its arguments, indented ("" when
	// undeclared).
	Parameters string
	// Approval is the approval gate's state of the current version
	// ("pending", "approved", "denied"; "" when it has no request).
	Approval string
}

// ToolPage is a page of the registry.
type ToolPage struct {
	Tools []ToolInfo
	// Next is the path to list after for the next page ("" on the last).
	Next string
	// Total is how many tools the principal may read.
	Total int
}

// ToolDetail is a tool's page.
type ToolDetail struct {
	ToolInfo
	// Source is the current version's source as the tool tree holds it.
	Source string
	// Check is check_tool's verdict on the current source: errors,
	// warnings, risk and the risk findings.
	Check check.Result
	// Versions are the versions the journal keeps (every content hash the
	// tool had in a recorded run) and the current one, newest first.
	Versions []ToolVersion
	// Gate is the registration gate's last report on a change of this
	// tool (nil when none was made since the node keeps reports).
	Gate *gate.Report
	// GateAt is when Gate was made.
	GateAt time.Time
}

// ToolVersion is one version of a tool.
type ToolVersion struct {
	Hash string
	// Current says it is the tool tree's version now.
	Current bool
	// Runs counts the recorded runs of the tool at this version, Required
	// the runs of other tools that required it as a module.
	Runs     int
	Required int
	// First and Last are when the first and latest of those runs started
	// (zero for a current version that never ran); LastRun is the latest.
	First   time.Time
	Last    time.Time
	LastRun string
	// Commit is the Git commit of the latest run's tool tree, when known.
	Commit string
	// Approval is the approval gate's state of the version ("" when none).
	Approval string
	// Risk is check_tool's risk of this version's source ("" when the
	// source is not kept).
	Risk string
}

// ToolVersionDetail is one version's page.
type ToolVersionDetail struct {
	Path    string
	Version ToolVersion
	// Source is the version's source ("" when neither the journal nor the
	// tool tree keeps it; SourceNote says why).
	Source     string
	SourceNote string
	// Check is check_tool's verdict on Source (zero for the current
	// version: ToolDetail.Check is its verdict).
	Check check.Result
	// Base is the version Diff is against ("" when there is none: the
	// oldest version).
	Base string
	Diff []DiffLine
	// Runs are the version's runs, newest first; Next the cursor of the
	// next page (a run id, "" on the last).
	Runs []ToolRun
	Next string
}

// DiffOp is one line's part in a diff.
type DiffOp byte

// The diff operations.
const (
	DiffSame DiffOp = ' '
	DiffAdd  DiffOp = '+'
	DiffDel  DiffOp = '-'
	// DiffSkip stands for unchanged lines left out (Text says how many).
	DiffSkip DiffOp = '@'
)

// DiffLine is one line of a diff: OldLine and NewLine are 1-based (0
// where the line is not in that side).
type DiffLine struct {
	Op      DiffOp
	OldLine int
	NewLine int
	Text    string
}

// ToolRun is one run of a tool version.
type ToolRun struct {
	ID       string
	Kind     string
	Status   string
	Started  time.Time
	Duration time.Duration
	Calls    int
	Error    string
}
