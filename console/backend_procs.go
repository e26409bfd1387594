package console

import (
	"context"
	"time"
)

// ProcsBackend is what the Processes and Cluster pages read: the process
// table of this node or of another member of its cluster (through that
// member's kernel actor, with the principal's token, as 'agentos ps
// [--cluster]' and 'agentos events [--cluster]' ask it), and the cluster's
// members with what each hosts and the forges in flight ('agentos cluster
// status').
//
// IMPORTANT: node is "" for this node, else a member's address as
// ClusterMember.Address gives it. A Backend MUST ask another member only
// when it is a member the node sees alive (ErrNotFound otherwise), MUST
// send the ask with the principal's own token (never the node's: the
// member's kernel authorizes it as it does any token), and MUST answer an
// error wrapping ErrNoAnswer when the member did not answer or refused.
type ProcsBackend interface {
	// Processes returns node's live processes, by PID.
	Processes(ctx context.Context, who Principal, node string) ([]Proc, error)
	// Events returns node's kernel's recent events after seq after,
	// oldest first, at most limit (the most recent ones when more remain).
	Events(ctx context.Context, who Principal, node string, after uint64, limit int) ([]ProcEvent, error)
	// Cluster returns the node's cluster; a node in no cluster answers a
	// ClusterView with Clustered false.
	Cluster(ctx context.Context, who Principal) (ClusterView, error)
}

// Proc is one process of the table.
type Proc struct {
	PID     uint64
	Parent  uint64
	Name    string
	Image   string
	Status  string
	Mailbox int
	Started time.Time
	Calls   uint64
	// Usage is what it (and its descendants) spent per meter, Left the
	// budget left per limited meter ("meter=value", sorted).
	Usage []string
	Left  []string
	// Supervisor says it supervises children (a supervisor process: its
	// restarts are among the events).
	Supervisor bool
}

// ProcEvent is one kernel event.
type ProcEvent struct {
	Seq    uint64
	Time   time.Time
	Kind   string
	PID    uint64
	Parent uint64
	Name   string
	Reason string
	Meter  string
	Amount float64
	Detail string
}

// ClusterView is the cluster as the node sees it.
type ClusterView struct {
	// Clustered is false when the node is in no cluster (the rest empty).
	Clustered bool
	Cluster   string
	Self      string
	Members   []ClusterMember
	// Left are the members seen leave or die.
	Left []string
}

// ClusterMember is one member of the cluster, as it answered for itself.
type ClusterMember struct {
	ID      string
	Address string
	Kinds   []string
	Root    string
	PID     string
	Version string
	// Forges are the forges in flight on it (their spec hashes);
	// Activations every grain it holds, as kind/identity.
	Forges      []string
	Activations []string
	// Error is why it did not answer ("" when it did).
	Error string
}
