// Package agentos is the embedding API of agentos, a runtime for long-lived
// multi-agent systems in which agents forge their own tools: an agent writes
// a TypeScript tool, the runtime checks it on a real syntax tree, runs it in
// a sandbox with hard limits, and keeps it for every agent to reuse.
//
// This package holds what a tool root is made of: its configuration file
// (agentos.json, see Config), its layout (Init), and the translation of the
// configuration into the options of the executor and the checker. The
// runtime itself lives in actors/executor (running tools), actors/forge/check
// (check_tool), vfs (the jail) and driver (the devices every I/O goes
// through).
//
// IMPORTANT: programs that run tools in worker processes (the default) MUST
// call executor.WorkerMain first thing in main; see package executor.
package agentos
