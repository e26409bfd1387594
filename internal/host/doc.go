// Package host is agentos's composition root: the one package that opens a
// node's resources and hands them to the parts, for the embedding API (the
// root package agentos), every verb of the agentos command and the
// examples.
//
// Lifecycle: Start runs the node's assembly as an ordered list of steps
// (Runtime.steps: the state directories, the tools and their Git upstream,
// the journal, the drivers, the executor and the recovery of unfinished
// runs, the kernel, the model, the memory, the node's actor tree, the
// cluster, the default process, the metrics endpoint), each returning the
// close of what it opened. Close runs the closes of the steps that opened,
// in reverse order, bounded by CloseTimeout; a Start that fails does the
// same before it returns.
//
// Config is a tool root's agentos.json (LoadConfig reads it once, with a
// positional decoder whose errors name the key, its line and column);
// every key is documented in docs/CONFIG.md, kept complete by a test. The
// helpers beside it (OpenExecutorSetup, OpenJournal, ForgeReplayOptions,
// SyncTools, Init, QuotaUse, Revoke, DecideOffline ...) assemble the part
// one CLI verb needs without booting a whole node.
//
// Failure: every error says what was wrong and what to do; a refused
// configuration names docs/CONFIG.md.
package host
