// Package agentos is the embedding API of agentos, a runtime for long-lived
// multi-agent systems in which agents forge their own tools: an agent writes
// a TypeScript tool, the runtime checks it on a real syntax tree, runs it in
// a sandbox with hard limits, journals every I/O it does, and keeps it in
// Git for every agent to reuse.
//
// A program embeds agentos with three things from this package:
//
//   - Config: a tool root's configuration (agentos.json; LoadConfig reads
//     and validates it, every key is documented in docs/CONFIG.md) and its
//     translation into the options of the parts (ExecutorOptions,
//     OpenExecutorSetup, CheckOptions, PruneOptions, OpenJournal).
//   - Start: boots a Runtime over a tool root from a Config: the journal,
//     the executor, the registry, Git, the kernel and the actor tree, then
//     resumes the runs a crash left unfinished.
//   - Runtime: the running node. Tools and ToolsFor hand the kernel tools
//     to an LLM SDK, Call runs one, RunAgent runs an agent loop as a
//     process, Kernel spawns and signals processes, Close stops it all.
//
// Init lays out a new tool root (agentos init); QuotaUse and ResetQuota read
// and reset the quota kept across starts; SyncTools brings a root's tools up
// to date from its Git upstream. Exec, Replay*, Recover* are the executor's
// recording, replay and recovery of tool runs under the names this package
// has always offered.
//
// Everything else lives in its own package:
//
//   - node: the node boot (actor tree, supervisor) and the kernel tools.
//   - actors/kernel: the process table, capabilities and quotas per process.
//   - actors/executor: running tools in sandbox workers; recording,
//     replaying and recovering their runs (record.go, replay.go,
//     recover.go).
//   - actors/registry, actors/git (and actors/git/repo), actors/forge (and
//     actors/forge/check): the tool registry, Git persistence, forging and
//     checking tools.
//   - agent: the agent loop (Run) and an agent as a node process
//     (RunProcess).
//   - journal: the durable record of every run and driver call.
//   - driver: the devices every I/O goes through (fs, fetch, sql, llm),
//     and the database exec_sql reaches (OpenDatabase).
//   - vfs: the jail a tool sees; capability: grants, tokens and quotas.
//   - cmd/agentos: the command line, built on this package.
//
// IMPORTANT: programs that run tools in worker processes (the default) MUST
// call executor.WorkerMain first thing in main; see package executor.
package agentos
