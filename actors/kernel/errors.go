package kernel

import kernelclient "github.com/agentos-run/agentos/actors/kernel/client"

// Errors of the process table. Match them with errors.Is; the returned
// errors wrap them with the process and what to do. IMPORTANT: they are
// the kernel client's values (actors/kernel/client), so an error that
// crossed the wire and one returned here match the same sentinel.
var (
	// ErrNoProcess: the target process is not alive (it ended, or never was).
	ErrNoProcess = kernelclient.ErrNoProcess
	// ErrExited: the calling process has ended; its handle refuses calls.
	ErrExited = kernelclient.ErrExited
	// ErrNameTaken: a live process already holds the name.
	ErrNameTaken = kernelclient.ErrNameTaken
	// ErrClosed: the kernel is closed; nothing can be spawned.
	ErrClosed = kernelclient.ErrClosed
	// ErrInvalid: a call's arguments are wrong; the message says which.
	ErrInvalid = kernelclient.ErrInvalid
	// ErrNotRestorable: a snapshot was restored already, or its original
	// process may still run; only a fork (RestoreOptions.Fork) starts it
	// again.
	ErrNotRestorable = kernelclient.ErrNotRestorable
)

// RemoteError is an error that crossed the wire as a kernelpb.Failure: its
// text is the original error's, and errors.Is / errors.As reach the
// kernel's sentinel error (or *capability.QuotaError) its code names.
type RemoteError = kernelclient.RemoteError
