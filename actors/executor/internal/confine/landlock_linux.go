package confine

import (
	"errors"
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// applyLandlock restricts every thread of the process to no filesystem
// access, no TCP bind or connect, and no signals or abstract UNIX sockets
// outside its own Landlock domain, as far as the kernel's ABI allows.
func applyLandlock() LandlockReport {
	abi, err := llsys.LandlockGetABIVersion()
	switch {
	case errors.Is(err, unix.ENOSYS):
		return LandlockReport{Reason: "the kernel has no Landlock (it needs Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)"}
	case errors.Is(err, unix.EOPNOTSUPP):
		return LandlockReport{Reason: "the kernel has Landlock but it is disabled: add landlock to the lsm= boot parameter"}
	case errors.Is(err, unix.EPERM):
		return LandlockReport{Reason: "the Landlock system calls are refused (a seccomp filter of the parent or container?)"}
	case err != nil:
		return LandlockReport{Reason: fmt.Sprintf("asking the kernel for its Landlock ABI: %v", err)}
	case abi < 1:
		return LandlockReport{Reason: fmt.Sprintf("the kernel reports Landlock ABI %d", abi)}
	}
	if abi >= 6 {
		// go-landlock uses ABI 5 (no scoping) on kernels whose signal
		// scoping has a known bug (erratum 2 not fixed): report that.
		if errata, err := llsys.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			abi = 5
		}
	}
	rep := LandlockReport{ABI: abi, Restricts: restricts(abi)}
	// IMPORTANT: no rule at all: nothing is allowed. (With cgo, go-landlock
	// adds one of its own: listing /proc/<pid>/task, which its all-threads
	// mechanism needs.)
	if err := landlock.V11.BestEffort().Restrict(); err != nil {
		rep.Reason = fmt.Sprintf("applying the ruleset: %v", err)
		return rep
	}
	// Check it: the root directory must now be out of reach.
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		rep.Reason = "the ruleset was applied but / can still be opened"
		return rep
	}
	if !errors.Is(err, unix.EACCES) {
		rep.Reason = fmt.Sprintf("the ruleset was applied but opening / failed with %v instead of EACCES", err)
		return rep
	}
	rep.Active = true
	return rep
}

// restricts names the access classes Landlock handles at abi.
func restricts(abi int) []string {
	r := []string{"fs", "ptrace"}
	if abi >= 4 {
		r = append(r, "net_tcp")
	}
	if abi >= 6 {
		r = append(r, "scope_signal", "scope_abstract_unix")
	}
	return r
}

// noNewPrivs reports whether the calling thread has no_new_privs set.
func noNewPrivs() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	return err == nil && v == 1
}
