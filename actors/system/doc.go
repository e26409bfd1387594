// Package system is the actor system every agentos node runs: a
// protoactor-go ActorSystem behind fences for the protoactor behaviours
// that bite an embedding runtime. Each fence has a test that first shows
// the raw protoactor behaviour (so the test fails, on purpose, the day a
// protoactor upgrade changes it) and then shows the fence.
//
// The fences:
//
//	logging    protoactor logs at Info to stderr by default: every actor
//	           system start, every actor panic, dead letters. New routes its
//	           log lines to an slog.Logger of ours, filtered at Warn unless
//	           Options.Level says otherwise.
//	shutdown   ActorSystem.Shutdown stops no actor (it closes a channel),
//	           and panics when called twice. System.Shutdown stops every
//	           top-level actor spawned through System.Spawn/SpawnNamed, in
//	           reverse spawn order, children first, bounded by a timeout,
//	           then shuts protoactor down; it is idempotent.
//	root       RootContext.WithHeaders, WithSenderMiddleware and
//	           WithSpawnMiddleware change the context they are called on and
//	           return it, so on the shared ActorSystem.Root they change every
//	           caller's context. System.Root returns a new context per call.
//	remote     remote messages must be protobuf: see # Protocol and
//	           CheckRemote.
//
// # Protocol
//
// The System is not an actor and answers no message; it is called
// directly. What it fences is how messages travel:
//
// IMPORTANT: a message sent to an actor on another node (protoactor's
// remote, cluster grains) MUST be a pointer to a protoc-gen-go generated
// message, and the receiving node MUST link the generated package.
// protoactor does not check either before sending: a plain Go struct fails
// to serialize on the sender, where the endpoint writer logs an error and
// drops it, so a request simply times out; a protobuf type the receiver
// does not know makes its endpoint reader dereference a nil message type
// and panic outside any actor, which crashes the receiving process.
// Messages that may go remote MUST pass CheckRemote (call it where they are
// built, or in a test over every message type of a package's messages.go).
// Plain Go values remain fine between actors of one process.
//
// Root headers and sender middleware are per caller: a caller that needs
// them MUST call WithHeaders/WithSenderMiddleware/WithSpawnMiddleware on its
// own System.Root(), never on ActorSystem().Root. protoactor does not copy
// a root context's headers onto messages by itself; a sender middleware
// that reads ctx.MessageHeader() does.
//
// # Lifecycle
//
// New builds the system. Top-level actors MUST be spawned with
// System.Spawn or System.SpawnNamed to be stopped by Shutdown (actors
// spawned through a root context, or ActorSystem().Root, are not tracked).
// Actors that stop on their own are forgotten.
//
// Shutdown refuses new spawns (ErrShutdown), then stops the tracked
// top-level actors one at a time, last spawned first, and waits for each:
// protoactor stops an actor's children before the actor finishes, so every
// actor of a tree gets Stopping (parents first) and Stopped (children
// first). Spawn the actors that
// others depend on first (a journal before the kernel that writes to it):
// they stop last. Then Shutdown shuts the protoactor system down. Every
// further call returns the first call's result.
//
// # Failure
//
// Shutdown is bounded by its timeout: when an actor has not stopped in
// time (its Stopping or Stopped handler blocks, or one of its children's),
// Shutdown sends Stop to the remaining actors without waiting, shuts the
// system down anyway and returns a *StopError naming them
// (errors.Is(err, ErrStopTimeout)). IMPORTANT: such actors may still be
// running when Shutdown returns; their handlers MUST NOT block.
//
// A panic in a top-level actor is handled by protoactor's default
// strategy (restart, at most 10 times in 10 s, then stop); it never takes
// the process down. Its "[ACTOR] Recovering" line is Info and is filtered
// out by default: supervision decisions are reported by actors/supervisor.
package system
