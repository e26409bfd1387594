// Package client is the typed client of the executor actor
// (actors/executor): the requests a caller sends it (Run, Cancel, Replay)
// and the domain types they carry (RunRequest, Caller, Result,
// ReplayOptions, Replayed). Callers use it, never the raw messages
// (executorpb): it converts between these types and the wire messages, and
// maps a reply's Failure back to its sentinel error (errors.Is works).
//
// IMPORTANT: this package holds no actor and imports no actor package but
// the executor's messages: any package may import it to reach the executor
// actor (internal/archcheck's rule); only the composition root constructs
// the executor itself (package executor).
//
// # Protocol
//
//	Run{run_key, path, args, limits, record, caller} -> Ran{result, logs, error, run_id | failure}
//	Cancel{run_key}                                  -> Cancelled{found} (when awaited)
//	Replay{run_id, patched, sources, max_timeout}   -> Replayed{result, same, divergence, limit_hit | failure}
//
// # Failure
//
// A request the actor cannot answer in time fails with ErrUnavailable; an
// unexpected reply with ErrProtocol. A run's own failures (timeout,
// exception, ...) are Result.Error, never a Go error.
package client
