// Package memory is the agents' long-term memory: facts, lessons,
// preferences and the pages of conversations paged out of a model's
// context window, kept per agent name in a bbolt file and ranked for
// recall with the registry's BM25F search (toolmeta.Index), the one search
// implementation of agentos.
//
// # Model
//
// Every Item belongs to one agent (the name its process was spawned with)
// and has a Kind: "fact", "lesson", "preference" (what the remember kernel
// tool stores, and the distiller) or "page" (turns of a conversation the
// agent loop paged out of the model's window). Items of one agent and kind
// with the same text (case and spaces ignored) are stored once: a second
// Remember returns the first item.
//
// An agent name starting with EphemeralPrefix ("#") is kept in memory only
// and never written to the file: the memory of a process spawned without a
// name, which lives as long as the process (Drop forgets it).
//
// # Storage
//
// The file (agentos: .agentos/memory.db, mode 0600) is opened on first use
// and held until Close, like the journal: one process at a time; Open
// waits up to two seconds for another holder and fails with ErrBusy. Its
// layout: bucket "meta" (key "format": FormatVersion), bucket "agents"
// holding one bucket per agent name, whose keys are the items' ids
// (big-endian uint64 sequence numbers) and values their JSON. Each
// Remember and Forget is one fsynced transaction: an item Remember
// returned survives a crash.
//
// # Recall
//
// Each agent's items are indexed, per kind, in a toolmeta.Index (loaded
// from the file on the agent's first use): text as the description field,
// tags as the tags field. Recall searches the kinds asked for and merges
// the lists by score (0..1, the registry's normalisation). See
// docs/MEMORY.md.
//
// # Failure
//
// Errors wrap the sentinels of errors.go: ErrNotFound (no such item),
// ErrFull (the agent's MaxItems reached and no page left to drop),
// ErrInvalid (an empty text, an unknown kind, a bad name), ErrBusy,
// ErrClosed, ErrFormat (a file written by a newer agentos).
package memory
