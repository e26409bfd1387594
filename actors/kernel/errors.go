package kernel

import "errors"

// Errors of the process table. Match them with errors.Is; the returned
// errors wrap them with the process and what to do.
var (
	// ErrNoProcess: the target process is not alive (it ended, or never was).
	ErrNoProcess = errors.New("kernel: no such process")
	// ErrExited: the calling process has ended; its handle refuses calls.
	ErrExited = errors.New("kernel: process exited")
	// ErrNameTaken: a live process already holds the name.
	ErrNameTaken = errors.New("kernel: name already registered")
	// ErrClosed: the kernel is closed; nothing can be spawned.
	ErrClosed = errors.New("kernel: closed")
	// ErrInvalid: a call's arguments are wrong; the message says which.
	ErrInvalid = errors.New("kernel: invalid argument")
	// ErrNotRestorable: a snapshot was restored already, or its original
	// process may still run; only a fork (RestoreOptions.Fork) starts it
	// again.
	ErrNotRestorable = errors.New("kernel: snapshot not restorable")
)
