// Package kerneltools is the kernel tools bound to agent processes, over the
// node's actor tree. It constructs no actor: the composition root
// (internal/host, BootNode) starts them under one supervisor
// (one_for_one), wired to the node (Node.Wiring), and binds the node to
// them (Node.Attach):
//
//	kernel    the process table's endpoint (actors/kernel)
//	executor  tool runs (actors/executor)
//	registry  the tool index: meta.json, search (actors/registry)
//	git       the one writer of the tool tree (actors/git)
//	forge     reuse or forge a tool for a spec (actors/forge)
//
// # Protocol
//
// Node.Tools(p) returns the kernel tools bound to process p: list_files,
// read_file, write_file, patch_file, check_tool, exec_sql, search_tools,
// forge_tool, exec_tool, and the memory tools remember, recall, forget
// (Options.Memory: p's memory under its name, MemoryName; another agent's
// is read only under the memory_read right on its name). Every call waits while p is stopped, charges one
// tool call (refused calls too, so a flood of refusals uses the quota up),
// refuses arguments over Options.MaxArgsBytes and paths over MaxPathBytes,
// checks p's token for the right on the cleaned path (read, write, exec; a
// directory as "dir/"), and is traced (a span "agentos.kernel.<tool>") and
// counted. Values quoted in errors are clipped (a few hundred bytes and the
// whole length). exec_tool reserves its run's memory against memory_mb
// while it runs, never runs longer than the wall time left, is journaled,
// and is cancelled when p ends.
//
// # Lifecycle
//
// New makes the kernel tools over a process table (Options.Kernel); they
// answer once Attach has bound them to the started actor tree.
// Node.Close ends every process with reason "shutdown" (cancelling their
// runs, which stay resumable in the journal), waits for their Main
// functions, and leaves the cluster; the tree's owner then stops the
// actors, children first. The actor tree, executor, journal and jail
// belong to the composition root, which closes them after.
//
// # Failure
//
// A panicking actor is restarted by the supervisor (a driver panicking
// inside a tool run aborts that run and restarts the executor actor, other
// runs go on). Refused calls wrap capability.ErrDenied and name the missing
// right; quota refusals are *capability.QuotaError; bad arguments wrap
// kerneltool.ErrInvalidArgs and list the parameters.
package kerneltools
