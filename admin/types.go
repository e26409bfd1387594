package admin

import (
	"encoding/json"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/journal"
)

// RunSummary is one run as the node lists it: its metadata and how many
// driver calls it recorded.
type RunSummary struct {
	journal.RunMeta
	Calls int `json:"calls"`
}

// ExecRequest asks a serving node to run a tool as 'agentos exec' does:
// the operator's run (no caller restriction: only the socket's owner can
// ask), recorded in the node's journal.
type ExecRequest struct {
	// Path is the tool, relative to the tool root.
	Path string `json:"path"`
	// Args is the JSON object passed to the tool ({} when empty).
	Args json.RawMessage `json:"args,omitempty"`
	// Timeout overrides the run's wall-clock limit (0: the node's default).
	Timeout time.Duration `json:"timeout_ns,omitempty"`
}

// ExecReply is the node's answer to an ExecRequest: the run's result and
// its journal id, as 'agentos exec --json' prints them.
type ExecReply struct {
	execclient.Result
	Run string `json:"run,omitempty"`
}

// RecoverRequest asks a serving node to resume unfinished runs: Run alone
// (an id or unique prefix, resumed in a worker process even when
// quarantined), or every unfinished tool run that is not in flight on the
// node (Run empty).
type RecoverRequest struct {
	Run string `json:"run,omitempty"`
	// Timeout, when positive, overrides each resumed run's recorded
	// timeout ('agentos recover --timeout').
	Timeout time.Duration `json:"timeout,omitempty"`
}

// SignalRequest asks the node's kernel to signal a process.
type SignalRequest struct {
	PID uint64 `json:"pid"`
	// Signal is "kill", "term", "stop" or "cont".
	Signal string `json:"signal"`
	// By names who asked (the killed process's exit detail); empty: "admin
	// socket".
	By string `json:"by,omitempty"`
}

// SnapshotRequest asks the node's kernel to snapshot a process
// (kernelpb.Snapshot): agentos snapshot.
type SnapshotRequest struct {
	// Process is the PID or the registered name.
	Process string `json:"process"`
	// Kill ends the process in the same step (a migration).
	Kill bool `json:"kill,omitempty"`
	// By names who asked (the killed process's exit detail).
	By string `json:"by,omitempty"`
}

// RestoreRequest asks the node's kernel to restore a snapshot of its
// journal (kernelpb.Restore): agentos restore.
type RestoreRequest struct {
	// Snapshot is the snapshot's id (a unique prefix will do).
	Snapshot string `json:"snapshot"`
	// Name registers the restored process under another name.
	Name string `json:"name,omitempty"`
	// Fork restores a copy (kernel.RestoreOptions.Fork): the snapshot is
	// not consumed; the copy duplicates the process's rights and budget.
	Fork bool `json:"fork,omitempty"`
}

// RestoreReply is what POST /v1/restore answers: the restored process.
type RestoreReply struct {
	PID  uint64 `json:"pid"`
	Name string `json:"name,omitempty"`
}

// ApproveRequest answers an approval request ('agentos approve').
type ApproveRequest struct {
	// Target is an approval request id ("a-…", or a unique prefix), or a
	// tool path relative to the tool root (its pending request, else its
	// current version).
	Target string `json:"target"`
	// Deny denies instead of approving.
	Deny bool `json:"deny,omitempty"`
	// Reason is recorded with the decision.
	Reason string `json:"reason,omitempty"`
	// By is who decides, recorded with the decision ("cli:USER").
	By string `json:"by,omitempty"`
}

// MemoryRequest is one operation on the agents' long-term memory
// ('agentos memory'), as the socket's owner (no capability applies: the
// operator reads and edits every agent's memory).
type MemoryRequest struct {
	// Op is "agents" (every agent with a memory, counted by kind), "list"
	// (Agent's items, of Kind when set), "show" (Agent's items IDs),
	// "recall" (Agent's items best matching Query, of Kind when set, at
	// most Limit), "remember" (Text as an item of Kind with Tags) or
	// "forget" (Agent's items IDs).
	Op    string   `json:"op"`
	Agent string   `json:"agent,omitempty"`
	IDs   []string `json:"ids,omitempty"`
	Query string   `json:"query,omitempty"`
	Kind  string   `json:"kind,omitempty"`
	Limit int      `json:"limit,omitempty"`
	Text  string   `json:"text,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// RevokeRequest revokes capability tokens on the node ('agentos token
// revoke'): agentos.RevokeRequest on the wire.
type RevokeRequest struct {
	// Target is a token id, a holder's name, or a token itself.
	Target string `json:"target"`
	// Holder reads Target as a holder's name even when it looks like an id.
	Holder bool `json:"holder,omitempty"`
	// Force revokes a Target nothing on the node knows.
	Force bool `json:"force,omitempty"`
}
