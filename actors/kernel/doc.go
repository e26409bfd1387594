// Package kernel is the agentos kernel: the process table of agent
// processes, their capabilities and quotas, the kernel tools they call, and
// the node's actor tree.
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
// events (spawn, exit, signal, restart, charge, refused).
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
// Boot starts the node's actors under one supervisor (one_for_one):
//
//	kernel    PS, EventsQuery, Signal (messages.go), for other actors
//	executor  tool runs (actors/executor)
//	git       the one writer of the tool tree (actors/git)
//
// Node.Tools(p) returns the kernel tools bound to process p: list_files,
// read_file, write_file, patch_file, check_tool, exec_tool. Every call
// waits while p is stopped, charges one tool call (refused calls too, so a
// flood of refusals uses the quota up), refuses arguments over
// NodeOptions.MaxArgsBytes and paths over MaxPathBytes, checks p's token for
// the right on the cleaned path (read, write, exec; a directory as "dir/"),
// and is traced (a span "agentos.kernel.<tool>") and counted. Values quoted
// in errors and kept in events are clipped (a few hundred bytes and the
// whole length). exec_tool
// reserves its run's memory against memory_mb while it runs, never runs
// longer than the wall time left, is journaled, and is cancelled when p
// ends.
//
// # Lifecycle
//
// New makes an empty table; Boot starts the actors. Node.Close ends every
// process with reason "shutdown" (cancelling their runs, which stay
// resumable in the journal), waits for their Main functions, then stops the
// actors, children first. The executor, journal and jail belong to the
// caller, who closes them after.
//
// # Failure
//
// A panicking Main is a fault of that process only; a panicking actor is
// restarted by the supervisor (a driver panicking inside a tool run aborts
// that run and restarts the executor actor, other runs go on). Refused
// calls wrap capability.ErrDenied and name the missing right; quota
// refusals are *capability.QuotaError; bad arguments wrap ErrInvalidArgs
// and list the parameters.
package kernel
