// Package executor runs TypeScript tools: esbuild transpiles them (cached by
// content hash), goja runs them in a fresh, hardened runtime per run, and the
// `tgp` bridge is their only way out.
//
// # Isolation
//
// goja has no heap limit, and some native built-ins ignore interrupts for
// seconds, so a limit that must hold cannot be enforced inside the host
// process. By default (IsolationProcess) tools run in sandbox worker
// processes: the program's own binary re-executed in worker mode, one tool at
// a time each, in a pool of warm workers. A worker caps its address space
// with RLIMIT_AS, confines itself at the OS level (Landlock, seccomp,
// no_new_privs: no file, socket or process of its own; see Confine),
// interrupts the tool at its deadline or limit and tells the parent why,
// and is SIGKILLed by the parent KillGrace later if it has not stopped (a
// native built-in ignoring the interrupt); its bridge calls are
// answered by the parent over its stdin/stdout, except two kinds that
// never wait for the parent: the clock and random calls of a run that
// streams them (Request.StreamLocal: the worker answers them and streams
// each to the parent, which journals it), and the calls of a replay that
// equal their recording (Request.Recorded: answered from the recording
// handed to the worker with the job). A worker that dies is replaced
// transparently and the run reports why (timeout, memory limit, crash).
//
// IsolationInProcess runs tools on goroutines of the host process: about 4x
// faster per run, with the same interrupt, stack, output, JSON-nesting and
// guarded-allocation limits, but a native built-in that ignores the
// interrupt runs past the deadline, and a memory bomb the guards do not catch
// can still kill the host (a journaled run in flight is then quarantined at
// the next start, not re-run). New logs InProcessWarning. Use it only for
// trusted tools.
//
// IMPORTANT: a program using IsolationProcess MUST call WorkerMain at the very
// start of main (and test binaries in TestMain), so that the re-executed
// binary serves as a worker instead of running the program again:
//
//	func main() {
//		executor.WorkerMain()
//		...
//	}
//
// The pool starts agentos-worker (cmd/agentos-worker, WorkerBinaryName)
// instead when it sits next to the executable and was built with it
// (FindWorkerBinary says which program, and why): it links only the worker
// side (package worker) and starts several times faster.
//
// # Protocol
//
// Exec(ctx, Request) is the only entry point; it is safe for concurrent use.
// A run reads its tool through the jail (vfs), so a path outside the tool
// root is refused. Every bridge call, plus the clock behind Date and the seed
// behind Math.random, is a driver.Call on the run's Host: the executor's
// devices wrapped by the Request's Middleware (the journal's hook).
//
// Props(ex, ActorOptions) is the executor as a protoactor actor. Its
// messages are protobuf (executorpb/executor.proto), so they can cross
// nodes; callers use its typed client (package actors/executor/client,
// with the domain types the messages carry: RunRequest, Caller, Result,
// ReplayOptions), never the raw messages:
//
//	Run{run_key, path, args, limits, record, caller} -> Ran{result, logs, error, run_id | failure}
//	Cancel{run_key}                                  -> Cancelled{found} (when awaited)
//	Replay{run_id, patched, sources, max_timeout}   -> Replayed{result, same, divergence, limit_hit | failure}
//
// Each run executes on its own goroutine and is recorded in the journal
// when asked. The caller is data: a process's pid, name, holder and its
// capability token (capability.Token.Encode). The actor verifies the token
// with ActorOptions.Authority (the kernel's) and checks it, live, on every
// file access, require and driver call of the run (rights.go): a token
// revoked or expired during the run refuses the calls from then on, and
// every refusal is reported to ActorOptions.OnRefused. Cancellation is a
// message: Client.Run sends Cancel when its context ends, and
// Client.Cancel waits until the run's cancellation has taken effect (the
// node calls it when a process ends, before the kernel revokes the
// process's token, so that the run ends "cancelled" and stays resumable).
// A Cancel that crosses its Run is remembered, and that run never starts.
// There is no streaming: a run's logs come back whole in Ran. A Replay
// (local only: one from another node is refused) replays a recorded run of
// the actor's journal offline, on its own goroutine like a run, under its
// run key so that a Cancel ends it: it is how the registration gate
// (governance/gate) replays, without holding the executor.
//
// A driver that panics aborts its run (Kind "internal") and the panic is
// raised in the actor (runPanicked, local only), so its supervisor restarts
// it as its spec says; other runs in flight are untouched.
//
// # Recording, replay and recovery
//
// Record runs a request and journals the run: its source by content hash,
// its limits, its caller's grants and every driver call (record.go). Replay
// runs a recorded run again offline, every driver call answered from the
// journal, optionally against a patched source, and reports the first
// divergence (replay.go). Recover resumes the runs a crash left unfinished
// under their recorded limits and their caller's rights (CallerRights),
// quarantining those whose host died while they ran in-process; RecoverRun
// resumes one on request, in process isolation (recover.go).
//
// # Failure
//
// Exec never panics and never returns a Go error: every failure is a
// Result.Error with a stable Kind (timeout, memory_limit, stack_overflow,
// output_too_large, exception, compile_error, ...), a message saying what to
// do, and the tool's stack with TypeScript line numbers where there is one.
//
// # Lifecycle
//
// New prewarms the worker pool in the background; Close kills every worker
// and waits for them. Runs after Close fail with Kind "cancelled".
package executor
