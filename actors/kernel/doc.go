// Package kernel is the agentos kernel: the process table of agent
// processes, their capabilities and quotas, and the kernel actor that is
// the table's endpoint for other actors. The node's actor tree and the
// kernel tools bound to processes are package kerneltools's.
//
// # Processes
//
// An agent process is a goroutine with a mailbox (Process.Send, Recv), a
// capability token and a quota account. Kernel.Spawn starts one on behalf
// of the embedding program; Process.Spawn starts a child, which needs the
// spawn right, gets a subset of its parent's grants (derived, so revoking
// the parent's token revokes the child's) and a quota account under its
// parent's. A process ends when its Main returns, panics, is killed, passes
// its deadline, exceeds a quota, or the kernel closes; its Reason says which
// (normal, fault, killed, quota:<meter>, deadline, shutdown).
//
// Links and monitors tell others: a monitor receives a *Down with the
// reason; a link kills the partner when the process ends abnormally, unless
// the partner traps exits (then it receives a *Down). Supervise builds
// supervisor processes from that (one_for_one, one_for_all, rest_for_one,
// restart intensity, exponential backoff). Names (Register, Lookup) are
// cleared when their process ends. Stop pauses a process (its mailbox and
// kernel calls wait) until Continue; Terminate delivers a catchable *Term;
// Kill ends it at once. PS and Events show the table and the recent kernel
// events (spawn, exit, signal, restart, charge, refused, snapshot,
// restore).
//
// # Snapshots
//
// Kernel.Snapshot captures a process's durable state (name, image, its
// token's grants and caveats, quota left, waiting messages, the state it
// exposes with Process.SetState), sealed with the kernel's capability
// authority; Options.Snapshots keeps it (JournalSnapshots: in the
// journal). Kernel.Restore starts its registered image again, on this
// kernel or one sharing the signing key, with a token minted for exactly
// the same grants, expiry and uses left and the same budget left; a
// snapshot whose seal does not verify is refused. See
// docs/GOVERNANCE.md.
//
// IMPORTANT: processes are goroutines, not protoactor actors, on purpose:
// protoactor schedules a goroutine per message to an idle actor, which caps
// a two-actor ping-pong at about 300k messages/s on the reference machine,
// where a kernel mailbox does over 2M (docs/PERFORMANCE.md). Go cannot
// pause a goroutine, so Stop takes effect at the process's next kernel call
// or Recv.
//
// # Protocol
//
// The kernel actor (Props) is the node's process-table endpoint: ps,
// events, signals, spawn (of an image named with RegisterImage), send,
// monitor, quota charges and refunds of agent processes are protobuf
// messages to it (kernelpb/kernel.proto, listed in messages.go), so they
// can come from another actor or, later, another node. Callers use Client
// (actors/kernel/client); errors cross as a kernelpb.Failure and come back as the
// errors below (errors.Is) or a *capability.QuotaError (errors.As).
// The composition root (internal/host) boots the actor under the node's supervisor; the embedding
// program may still call the Kernel's methods directly.
//
// # Lifecycle
//
// New makes an empty table. Close ends every process with reason
// "shutdown" (cancelling the tool runs each holds, see Process.HoldRun,
// which stay resumable in the journal) and waits for their Main functions.
//
// # Failure
//
// A panicking Main is a fault of that process only. Refused checks wrap
// capability.ErrDenied and name the missing right; quota refusals are
// *capability.QuotaError.
package kernel
