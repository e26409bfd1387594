package client

import (
	"errors"

	"github.com/agentos-run/agentos/actors/system"
)

// Errors of the process table. Match them with errors.Is; the returned
// errors wrap them with the process and what to do. Package kernel
// declares the same values under the same names.
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

// RemoteError is an error that crossed the wire as a kernelpb.Failure: its
// text is the original error's, and errors.Is / errors.As reach the
// kernel's sentinel error (or *capability.QuotaError) its code names.
type RemoteError = system.RemoteError
