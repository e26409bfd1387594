package client

import (
	"time"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
)

// PID identifies a process of one kernel. PIDs are never reused while the
// kernel lives (the process-handle leaf's type, actors/kernel/proc).
type PID = proc.PID

// Status is a process's state as ps shows it.
type Status string

// The statuses.
const (
	Running Status = "running" // executing, or in a kernel call
	Waiting Status = "waiting" // blocked in Recv
	Stopped Status = "stopped" // paused by Stop until Continue
	Dead    Status = "dead"
)

// ProcInfo is one row of ps.
type ProcInfo struct {
	PID     PID       `json:"pid"`
	Parent  PID       `json:"parent,omitempty"`
	Name    string    `json:"name,omitempty"`
	Image   string    `json:"image,omitempty"`
	Status  Status    `json:"status"`
	Mailbox int       `json:"mailbox"`
	Started time.Time `json:"started"`
	// Calls is how many kernel tool calls the process made (refused ones
	// excluded).
	Calls uint64 `json:"calls"`
	// Usage is what the process (and its descendants) spent per meter.
	Usage map[capability.Meter]float64 `json:"usage,omitempty"`
	// Left is the budget left per limited meter, the tightest of the
	// process's and its ancestors' limits.
	Left map[capability.Meter]float64 `json:"left,omitempty"`
}

// EventKind names a kernel event; the values are stable strings.
type EventKind string

// The kernel events.
const (
	EventSpawn    EventKind = "spawn"    // a process started
	EventExit     EventKind = "exit"     // a process ended; Reason says why
	EventSignal   EventKind = "signal"   // kill, term, stop or cont (Detail)
	EventRegister EventKind = "register" // a process took a name
	EventCharge   EventKind = "charge"   // Amount of Meter charged to PID
	EventRefused  EventKind = "refused"  // a capability check failed; Detail says which right
	EventRestart  EventKind = "restart"  // a supervisor restarted a child (Name)
	EventSnapshot EventKind = "snapshot" // a snapshot of PID was taken; Detail is its id
	EventRestore  EventKind = "restore"  // PID was restored from a snapshot; Detail is its id or the snapshot's pid
)

// Event is one entry of the kernel's recent-events log.
type Event struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Kind   EventKind `json:"kind"`
	PID    PID       `json:"pid,omitempty"`
	Parent PID       `json:"parent,omitempty"`
	Name   string    `json:"name,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Meter  string    `json:"meter,omitempty"`
	Amount float64   `json:"amount,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// SpawnRequest is what Client.Spawn asks for (see kernelpb.Spawn).
type SpawnRequest struct {
	// Image is a name registered with Kernel.RegisterImage.
	Image string
	// Name registers the process (empty: nameless).
	Name   string
	Grants []capability.Grant
	Quota  capability.Limits
	// Parent spawns the process as Parent's child (0: the kernel's).
	Parent PID
	// Link links the child with Parent.
	Link bool
	// Deadline ends the process with reason deadline after this long.
	Deadline time.Duration
}

// SnapshotInfo is what Client.Snapshot answers (kernelpb.SnapshotTaken).
type SnapshotInfo struct {
	// ID is the stored snapshot's id ("" when the node keeps none).
	ID    string `json:"id"`
	PID   PID    `json:"pid"`
	Name  string `json:"name,omitempty"`
	Image string `json:"image"`
	// Mailbox is how many waiting messages it holds.
	Mailbox int `json:"mailbox"`
	// Sealed is the sealed snapshot (Snapshot.Encode): restore it on a node
	// that does not share the journal with Client.RestoreSealed.
	Sealed []byte `json:"-"`
}
