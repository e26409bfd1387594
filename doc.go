// Package agentos is the embedding API of agentos, a runtime for long-lived
// multi-agent systems in which agents forge their own tools: an agent writes
// a TypeScript tool, the runtime checks it on a real syntax tree, runs it in
// a sandbox with hard limits, journals every I/O it does, and keeps it in
// Git for every agent to reuse.
//
// A program embeds agentos with three things:
//
//   - Options: where the tool root is and how it is configured. A nil
//     *Options, and every zero field, mean the defaults: the current
//     directory and its agentos.json (LoadConfig; every key is documented
//     in docs/CONFIG.md).
//   - Start: boots a node over the tool root: the journal, the executor,
//     the registry, Git, the kernel and the actor tree, then resumes the
//     runs a crash left unfinished.
//   - Runtime: the running node's embedding verbs. Tools hands the kernel
//     tools to an LLM SDK and Call runs one, RunAgent and Spawn run agents
//     as processes, Serve answers the CLI on the node socket, MCPServer
//     serves the tools over MCP, Snapshot and Restore move processes,
//     Kernel is the process table for process work, Close stops it all.
//
// Lifecycle: Start opens the node's resources as an ordered list of steps,
// each with its close (package internal/host, the one composition root the
// agentos command and the examples share); Close runs those closes in
// reverse order, once. A Start that fails closes what it opened.
//
// Everything else lives in its own package and is reached through it:
//
//   - kerneltools: the kernel tools bound to a process (and admin, the node
//     socket the CLI talks to).
//   - actors/kernel: the process table, capabilities and quotas per process.
//   - actors/executor: running tools in sandbox workers; recording,
//     replaying and recovering their runs.
//   - actors/registry, actors/git, actors/forge: the tool registry, Git
//     persistence, forging and checking tools.
//   - agent: the agent loop; journal: the durable record of every run.
//   - driver: the devices every I/O goes through; vfs: the jail a tool
//     sees; capability: grants, tokens and quotas.
//   - cmd/agentos: the command line.
//
// IMPORTANT: programs that run tools in worker processes (the default) MUST
// call executor.WorkerMain first thing in main; see package executor.
package agentos
