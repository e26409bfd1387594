package executor

import "github.com/landlock-lsm/go-landlock/landlock"

// landlockEveryThread is the Landlock restriction of the workers that are
// this program started again (WorkerMain): go-landlock's, which reaches
// every thread through libpsx and so works in a program that links cgo, as
// the agentos binary does for tree-sitter. The worker program
// (cmd/agentos-worker) links neither and uses confine's own. It handles
// every access class of the kernel's ABI and allows nothing, as confine's
// does; the ABI it is given is the one go-landlock detects itself.
func landlockEveryThread(int) error { return landlock.V11.BestEffort().Restrict() }
