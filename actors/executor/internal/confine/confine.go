// Package confine locks a sandbox worker process down at the OS level, so
// that code which escaped goja inside the worker still cannot reach the
// world: Landlock takes away the filesystem, TCP and signals to other
// processes, a seccomp filter refuses the system calls that open files,
// sockets and processes or widen the kernel's attack surface, and
// no_new_privs keeps both from being shed.
//
// A worker needs nothing from the OS once it has started: every file,
// network or database access of a tool is a driver call answered by the
// parent over the worker's stdin/stdout, and the per-run /tmp lives in the
// parent too. So the worker confines itself to nothing: no path is allowed,
// only the pipes it already holds (and the descriptors the Go runtime opened
// at start) stay usable.
//
// IMPORTANT: Apply confines the whole calling process, every thread, for the
// rest of its life. Call it only in a worker, after its setup (RLIMIT_AS)
// and before it reads its first job.
package confine

import (
	"fmt"
	"strings"
	"time"
)

// Mode says how hard a worker insists on being confined.
type Mode string

// The modes.
const (
	// BestEffort applies every layer the kernel supports and reports the
	// ones it lacks; a worker starts either way. The default.
	BestEffort Mode = "best_effort"
	// Required makes a worker refuse to start unless Landlock and seccomp
	// (with no_new_privs) are all in force.
	Required Mode = "required"
	// Off applies nothing (debugging; trusted tools only).
	Off Mode = "off"
)

// ParseMode returns the mode named s; "" is BestEffort.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "":
		return BestEffort, nil
	case BestEffort, Required, Off:
		return Mode(s), nil
	}
	return "", fmt.Errorf("confine mode %q is not known: use %q (the default), %q or %q", s, BestEffort, Required, Off)
}

// Report says which protections a worker actually has in force: it is
// measured by the worker itself after applying them (each layer is checked
// by an access it must refuse), not guessed from the kernel version.
type Report struct {
	// Mode is the mode the worker was started in.
	Mode Mode `json:"mode"`
	// RlimitAS is the worker's address-space limit (RLIMIT_AS).
	RlimitAS RlimitReport `json:"rlimit_as"`
	// Landlock is the filesystem, network and IPC-scope confinement.
	Landlock LandlockReport `json:"landlock"`
	// Seccomp is the system-call filter.
	Seccomp SeccompReport `json:"seccomp"`
	// NoNewPrivs is true when every thread of the worker has
	// no_new_privs set (execve can never grant privileges, and the other
	// layers cannot be dropped).
	NoNewPrivs bool `json:"no_new_privs"`
	// SetupMicros is how long applying and checking the layers took in the
	// worker, in microseconds: paid once per worker start.
	SetupMicros float64 `json:"setup_us"`
}

// RlimitReport describes the worker's address-space limit.
type RlimitReport struct {
	Active bool   `json:"active"`
	Bytes  uint64 `json:"bytes,omitempty"`
}

// LandlockReport describes the Landlock layer.
type LandlockReport struct {
	Active bool `json:"active"`
	// ABI is the Landlock ABI version in use: the kernel's, or 5 on a
	// kernel whose signal scoping has a known bug (0: none).
	ABI int `json:"abi"`
	// Restricts names what the ruleset handles at that ABI: "fs" (every
	// filesystem access), "ptrace" (tracing or reading the memory of
	// processes outside the worker), "net_tcp" (TCP bind and connect),
	// "scope_signal" (signals to processes outside the worker),
	// "scope_abstract_unix" (abstract UNIX sockets outside the worker).
	// Nothing is allowed.
	Restricts []string `json:"restricts,omitempty"`
	// Reason says why the layer is not active.
	Reason string `json:"reason,omitempty"`
}

// SeccompReport describes the seccomp layer.
type SeccompReport struct {
	Active bool `json:"active"`
	// Denied is how many system calls the filter refuses (outright or by
	// argument); see DeniedSyscalls.
	Denied int `json:"denied,omitempty"`
	// Action is what a refused call gets ("EPERM").
	Action string `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Complete reports whether every layer Required asks for is in force.
func (r Report) Complete() bool {
	return r.Landlock.Active && r.Seccomp.Active && r.NoNewPrivs
}

// Missing lists, in words, the layers that are not in force and why.
func (r Report) Missing() string {
	var miss []string
	if !r.Landlock.Active {
		miss = append(miss, "Landlock: "+r.Landlock.Reason)
	}
	if !r.Seccomp.Active {
		miss = append(miss, "seccomp: "+r.Seccomp.Reason)
	}
	if !r.NoNewPrivs {
		miss = append(miss, "no_new_privs: not set on every thread")
	}
	return strings.Join(miss, "; ")
}

// Restrictor applies to every thread of the process a Landlock ruleset
// that handles every access class of Landlock ABI abi and allows nothing.
//
// Apply's own (a nil Restrictor) runs the system calls on every thread
// through Go's runtime (syscall.AllThreadsSyscall6), which a program that
// links cgo cannot use: there the runtime refuses it (ENOTSUP), since C
// may have started threads it does not know. Such a program MUST pass one
// that can; the agentos binary, which links cgo for tree-sitter, passes
// go-landlock's (cgoworker.Restrict, through executor.WorkerMain and
// cmd/agentos's quickworker), which reaches each thread through libpsx. IMPORTANT: the worker program (cmd/agentos-worker) links neither
// cgo nor go-landlock, whose libpsx would link cgo into it: a dynamically
// linked start costs it about 2 ms.
type Restrictor func(abi int) error

// Apply confines the calling process as mode says and reports what is in
// force, restricting every thread's Landlock domain with restrict (nil:
// Go's all-threads system call). In Required mode it returns an error
// when a layer could not be applied (the worker MUST then exit without
// serving); in BestEffort mode it never fails and the report says what is
// missing.
func Apply(mode Mode, restrict Restrictor) (r Report, err error) {
	r = Report{Mode: mode}
	start := time.Now()
	defer func() { r.SetupMicros = float64(time.Since(start).Nanoseconds()) / 1e3 }()
	if mode == Off {
		r.Landlock.Reason = "confinement is off"
		r.Seccomp.Reason = "confinement is off"
		return r, nil
	}
	// Landlock first: with cgo, go-landlock runs its system call on every
	// thread by signalling them after listing /proc/self/task, which the
	// seccomp filter would refuse.
	if restrict == nil {
		restrict = allThreads
	}
	r.Landlock = applyLandlock(restrict)
	r.Seccomp = applySeccomp()
	r.NoNewPrivs = noNewPrivs() && (r.Landlock.Active || r.Seccomp.Active)
	if mode == Required && !r.Complete() {
		return r, fmt.Errorf("confinement is required but not complete: %s", r.Missing())
	}
	return r, nil
}
