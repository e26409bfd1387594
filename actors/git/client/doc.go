// Package client is the typed client of the git actor (actors/git): the
// requests a caller sends it (WriteFile, WriteFenced, PatchFile, Announce,
// WaitFor, Pull), the results they return (Written, Synced), and the git
// actor's errors, which a reply's Failure maps back to (errors.Is works;
// a conflict comes back as a *repo.ConflictError, so errors.As works too).
// Callers use it, never the raw messages (gitpb).
//
// IMPORTANT: this package holds no actor and imports no actor package but
// the git actor's messages and its repository package (for the repository's
// errors): any package may import it to reach the git actor
// (internal/archcheck's rule); only the composition root builds the actor
// itself (package git, Props).
//
// # Protocol
//
//	WriteFile{path, content, token[, fence_run, fence]} -> Written{..., gate, failure}  Client.WriteFile, WriteFenced
//	PatchFile{path, search, replace, token}            -> Written{..., gate, failure}  Client.PatchFile
//	Announce{commit, branch, token}                    -> Synced{..., failure}         Client.Announce
//	WaitFor{commit, timeout_ms, token}                 -> Synced{..., failure}         Client.WaitFor
//	Pull{token}                                        -> Synced{..., failure}         Client.Pull
//
// # Failure
//
// A request the actor does not answer in time (stopped, the ctx ended) or
// answers with an unexpected message fails with ErrUnavailable: a write may
// or may not have happened, read the file to know. Every other failure is
// the actor's, carried as Failure{code, message} (FailureOf, the actor's
// side) and mapped back to its sentinel here.
package client
