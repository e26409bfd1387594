// Package proc is the process-handle leaf: what a package that runs as a
// kernel process (an agent, an MCP session) needs of its process and of
// the process table, as interfaces the kernel (actors/kernel) implements
// and the composition root hands in. With it, agent and mcpserver never
// import the kernel: *kernel.Process implements Process, *kernel.Kernel
// implements Table, and PID, Reason and ReasonKind are the kernel's own
// types (package kernel declares them as aliases of these).
//
// IMPORTANT: this package is a leaf (internal/archcheck's leaves): it
// holds no actor and imports no actor package. Its interfaces list only
// what agent and mcpserver call today; a method is added when a caller
// needs it, never in case one might.
package proc

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/agentos-run/agentos/capability"
)

// PID identifies a process of one kernel. PIDs are never reused while the
// kernel lives.
type PID uint64

func (p PID) String() string { return "<" + strconv.FormatUint(uint64(p), 10) + ">" }

// ReasonKind classifies why a process ended; the values are stable strings.
type ReasonKind string

// The exit reasons.
const (
	Normal   ReasonKind = "normal"   // Main returned nil
	Fault    ReasonKind = "fault"    // Main returned an error or panicked
	Killed   ReasonKind = "killed"   // Kill, or a linked process died abnormally
	Quota    ReasonKind = "quota"    // a charge exceeded the process's quota
	Deadline ReasonKind = "deadline" // SpawnOptions.Deadline passed
	Shutdown ReasonKind = "shutdown" // the kernel closed
	NoProc   ReasonKind = "noproc"   // Monitor of a process that was not alive
)

// Reason is why a process ended.
type Reason struct {
	Kind ReasonKind `json:"kind"`
	// Detail is the fault's error, the quota's meter, or who killed.
	Detail string `json:"detail,omitempty"`
}

// String renders the reason as ps and events show it: "normal",
// "fault: boom", "quota:llm_tokens", "killed: by <1>".
func (r Reason) String() string {
	switch {
	case r.Kind == Quota:
		return "quota:" + r.Detail
	case r.Detail == "":
		return string(r.Kind)
	default:
		return string(r.Kind) + ": " + r.Detail
	}
}

// Message is what Recv returns.
type Message struct {
	// From is the sender (0: the kernel or the embedding program).
	From PID
	// Body is the payload; *Down and *Term come from the kernel.
	Body any
}

// Term is a catchable request to terminate: a process receives it in its
// mailbox and decides how to end (clean up, then return). Compare Kill.
type Term struct{ From PID }

// Main is the body of a process spawned through a Spawner: it runs on the
// process's own goroutine, and ctx is cancelled when the process ends
// (killed, over its quota or deadline, the kernel closed). Main MUST
// return promptly then. nil ends the process normally; an error ends it
// with a fault (see kernel.Main, which this is the handle form of).
type Main func(ctx context.Context, p Process) error

// SpawnOptions are what a Spawner's caller chooses of a new process (the
// fields of kernel.SpawnOptions agent and mcpserver set).
type SpawnOptions struct {
	// Name registers the process (empty: nameless).
	Name string
	// Image names what the process runs, for ps and events.
	Image string
	// Grants are its rights. From a process they MUST be a subset of the
	// parent's; from the table any grant is minted.
	Grants []capability.Grant
	// Quota limits its own account.
	Quota capability.Limits
	// From, when set (a Table only), is the token the process's is
	// delegated from instead of minted (kernel.SpawnOptions.From).
	From *capability.Token
}

// Spawner starts processes: the process table (a child of the kernel) or
// a process (its own child, which needs the spawn right).
type Spawner interface {
	// SpawnProcess starts main as a new process and returns its handle.
	SpawnProcess(main Main, opts SpawnOptions) (Process, error)
}

// Process is the handle of a running process (kernel.Process). Its
// methods are safe for concurrent use; a handle of an ended process
// refuses the calls that act (Charge, SetState, SpawnProcess).
//
// IMPORTANT: a Process MUST be the handle its kernel handed out (a Main's
// argument, a Spawner's result): the node's kernel tools bind to the
// kernel's own process and refuse any other implementation.
type Process interface {
	Spawner
	// PID is the process id.
	PID() PID
	// Name is its registered name ("" when none).
	Name() string
	// Context is cancelled when the process ends.
	Context() context.Context
	// Done is closed when the process has ended.
	Done() <-chan struct{}
	// Reason says why it ended (ok false: it is alive).
	Reason() (Reason, bool)
	// Account is its quota account.
	Account() *capability.Account
	// Charge charges amount of m to its account and its ancestors'; a
	// refusal is a *capability.QuotaError and has ended the process.
	Charge(m capability.Meter, amount float64) error
	// State is what SetState last kept (after a restore: the snapshot's).
	State() json.RawMessage
	// SetState keeps state (JSON) for the process's next snapshot.
	SetState(state json.RawMessage) error
	// Token is its capability token (ok false: it holds none).
	Token() (capability.Token, bool)
	// Holder is its name in capability tokens ("pid:<n>").
	Holder() string
	// Check verifies that its token grants right on resource and consumes
	// one use of it; a refusal wraps capability.ErrDenied.
	Check(right capability.Right, resource string) error
	// Covers says whether its token grants right on resource, without
	// consuming a use.
	Covers(right capability.Right, resource string) bool
	// CountCall counts one kernel tool call it made (ps's calls).
	CountCall()
	// Gate waits while the process is stopped; it fails once it ended.
	Gate(ctx context.Context) error
	// Recv returns the next message of its mailbox, waiting for one.
	Recv(ctx context.Context) (Message, error)
}

// Table is the process table as a process's package sees it
// (kernel.Kernel): where its processes are spawned, found and killed, and
// the authority its tokens verify with.
type Table interface {
	Spawner
	// Authority is the capability authority the table's tokens are minted,
	// delegated and verified with.
	Authority() *capability.Authority
	// Lookup returns the live process registered as name.
	Lookup(name string) (PID, bool)
	// Handle returns the live process pid (ok false: none).
	Handle(pid PID) (Process, bool)
	// Kill ends pid at once (reason "killed: <by>").
	Kill(pid PID, by string) error
}
