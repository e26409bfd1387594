package executor

// The executor actor's messages are protobuf messages, defined in
// executorpb/executor.proto (Run -> Ran, Cancel -> Cancelled) so that they
// can cross nodes; callers use Client, never the raw messages.

// runPanicked is sent by a run's goroutine to its own actor when the run
// panicked, so that the panic reaches the actor's supervisor (the run's
// caller already got an internal error). IMPORTANT: local only (it carries
// the panic value): it never leaves the actor, so it is no wire message.
type runPanicked struct{ value any }
