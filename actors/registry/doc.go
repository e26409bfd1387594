// Package registry is the tool registry of a tool root: every tool under
// the tools directory with its description, parameters schema, tags,
// content hash, version and usage count, persisted in 256 shard files
// (meta/xx.json) and searchable by relevance, so the forge can reuse a tool instead of forging
// it again.
//
// # Registry files
//
// The registry is split into Shards files (shard.go): the entry of the
// tool at path p is in meta/<xx>.json, xx the FNV-1a hash of p modulo 256
// (ShardFile). Each is {"tools": {"<path>": Tool, ...}}: keys sorted,
// indented by two spaces, written atomically through the jail
// (vfs.Jail.WriteFile); a write rewrites one shard, not the registry, and
// Written says which files changed (what a Git commit takes). The single
// meta.json of earlier versions is read at Open and migrated into the
// shards (then removed). The registry owns these files: they MUST NOT be
// edited by hand while a runtime serves the root, and a Git merge of them
// is followed by Rebuild.
//
// A tool's metadata comes from its source (internal/toolmeta's Extract), parsed with the
// tree-sitter TypeScript grammar: the description is the leading JSDoc (the
// one right before the default export, else before the declaration the
// default export names, else the first before the first statement), its
// @tag lines the tags, and the parameters schema is the JSON Schema of the
// default export's first parameter when its type is declared (inline
// object types, local interfaces and type aliases, number / string /
// boolean / arrays / nested objects / literal unions; anything else {}).
// A source that does not parse is registered with what could be found.
//
// # Search
//
// Search ranks with BM25F over name, tags, description and path, and
// reports a score normalised to 0..1: the idf-weighted share of the query
// the tool covers (Registry.Search documents the formula). Threshold (default
// 0.85) is the score at or above which the forge reuses a tool: a query
// naming a tool's name and purpose scores at least that; an unrelated query
// scores near 0. The index (internal/toolmeta's Inverted) is updated incrementally on every change, and a
// search over 10,000 tools takes well under a millisecond.
//
// # Protocol
//
// The Registry is the API: Open, Register, Remove, Rebuild, Used, Get,
// List, Search, Flush, Close. It is safe for concurrent use: searches run
// in parallel with each other and with registrations, and never wait for a
// file write. Register, Remove and Rebuild are serialised with each other.
//
// Props(r) serves r as a protoactor actor whose messages are protobuf
// (registrypb/registry.proto; messages.go lists them): Register ->
// Registered, Search -> SearchResult, Get -> Got, Used -> Counted (Rebuild,
// Remove and Flush stay methods of the owner). Every one can cross
// a node. Callers outside this package MUST use the typed client
// (package actors/registry/client), which converts to and from Tool and
// Hit and maps a reply's Failure{code, message} back to the sentinel
// errors (errors.Is works).
// Unknown messages are logged at Warn and dropped.
//
// # Lifecycle
//
// Open loads the shards (and meta.json of earlier versions, and replays
// the registry log) and reconciles it
// with the tool files (as Rebuild does). Register and Remove are on disk
// before they return: in the registry log when Options.State is given
// (one appended record: a write costs the same whatever the number of
// tools; the changed shards are rewritten once writes pause for
// FlushDelay, when the log outgrows them, and at Flush, Close, Open and
// Rebuild: see log.go), else in their shard at once. An owner that
// publishes the registry (a Git commit) MUST call Flush first, then
// commit what Written returns. Used counts are batched for
// Options.FlushDelay and MUST be on disk after Flush or Close return. IMPORTANT: the owner of a Registry MUST call Close
// (or Flush) before the process exits, or the last usage counts are lost.
// The actor flushes when it stops, holds no state of its own, and so loses
// nothing when restarted; it never closes the Registry. Used is answered
// (Counted) once the count is taken, so a count its caller saw answered is
// never lost to a Stop, which overtakes the messages still queued.
//
// # Failure
//
// A missing or corrupt registry file (bad JSON, wrong shape, corrupt entries,
// entries whose hash no longer matches their file) MUST NOT make Open
// fail: it is logged at Warn via slog and rebuilt from the tools. A failed
// write returns an error wrapping ErrPersist; the change stays in memory
// and is written by the next write or Flush. Errors are sentinels (in
// actors/registry/client, which the actor's Failure codes map back to)
// wrapped with the path and what to do. A client request the actor does
// not answer (stopped, timed out, the ctx ended) returns an error wrapping
// client.ErrUnavailable.
package registry
