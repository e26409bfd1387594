// Package tournament runs prompt tournaments (persona.Tournament) as
// journaled runs: it starts one, resumes one a crash or a model failure
// left unfinished, and replays one offline.
//
// # Protocol
//
// A Runner holds what a tournament takes from the node, as fields: the
// journal, the model, the persona store and its approval gate, the
// tournament configuration, and Spawn, which starts the tournament's body
// as a child process of the default process. The package imports no actor
// and not the kernel tools: the composition root (internal/host) fills the
// Runner and adapts its process (Process) to the kernel's.
//
// Every model call and every tool score is journaled in a run of kind
// Kind, each committed before it is used, so that Replay needs no model
// and runs no scoring tool, and Resume pays only for the calls never
// answered.
//
// # Lifecycle
//
// A Runner is built per call and holds no state of its own: the journal
// run is the tournament's state. A winner is saved (unless a dry run)
// before the run ends, so that a crash in between resumes to the same save.
//
// # Failure
//
// A cancelled tournament, or one whose model failed (persona.ErrModel), is
// left running in the journal, to be resumed; any other failure ends the
// run failed.
package tournament
