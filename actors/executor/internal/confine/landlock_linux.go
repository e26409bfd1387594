package confine

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// applyLandlock restricts every thread of the process (through restrict)
// to no filesystem access, no TCP or UDP bind or connect, and no signals
// or abstract UNIX sockets outside its own Landlock domain, as far as the
// kernel's ABI allows.
func applyLandlock(restrict Restrictor) LandlockReport {
	abi, err := landlockAsk(unix.LANDLOCK_CREATE_RULESET_VERSION)
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
		// ABI 5 (no scoping) on kernels whose signal scoping has a known
		// bug (erratum 2 not fixed), as go-landlock does.
		if errata, err := landlockAsk(unix.LANDLOCK_CREATE_RULESET_ERRATA); err != nil || errata&0x2 == 0 {
			abi = 5
		}
	}
	rep := LandlockReport{ABI: abi, Restricts: restricts(abi)}
	// IMPORTANT: no rule at all: nothing is allowed. (With cgo, go-landlock
	// adds one of its own: listing /proc/<pid>/task, which its all-threads
	// mechanism needs.)
	if err := restrict(abi); err != nil {
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
	if abi >= 10 {
		r = append(r, "net_udp")
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

// landlockAsk asks the kernel for its Landlock ABI version or errata
// (flag: LANDLOCK_CREATE_RULESET_VERSION or _ERRATA).
func landlockAsk(flag uintptr) (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, flag)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// handledAt is the ruleset that handles every access right Landlock ABI
// abi knows (go-landlock's table, up to ABI 11) and its size in bytes as
// that ABI's kernel reads it.
func handledAt(abi int) (attr unix.LandlockRulesetAttr, size uintptr) {
	fs := []uint64{0, 1<<13 - 1, 1<<14 - 1, 1<<15 - 1, 1<<15 - 1, 1<<16 - 1, 1<<16 - 1, 1<<16 - 1, 1<<16 - 1, 1<<17 - 1}
	attr.Handled_access_fs = fs[min(abi, len(fs)-1)]
	size = 8
	if abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = 16
	}
	if abi >= 10 {
		attr.Handled_access_net |= unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 24
	}
	return attr, size
}

// allThreads is Apply's own Restrictor: it creates the ruleset, then sets
// no_new_privs (which restricting oneself requires) and restricts itself on
// every thread at once, through the Go runtime, which stops them all
// meanwhile (syscall.AllThreadsSyscall6; ENOTSUP in a program that links
// cgo, see Restrictor).
func allThreads(abi int) error {
	attr, size := handledAt(abi)
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	if _, _, errno := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); errno != 0 {
		if errno == syscall.ENOTSUP {
			return errors.New("this program links cgo, where Go cannot run a system call on every thread: it MUST pass its own confine.Restrictor (a program that embeds agentos: call executor.WorkerMain or cgoworker.Main)")
		}
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS) on every thread: %w", errno)
	}
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self on every thread: %w", errno)
	}
	return nil
}
