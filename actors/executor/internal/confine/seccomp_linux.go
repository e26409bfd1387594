//go:build linux && (amd64 || arm64)

package confine

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter is a deny-list: the Go runtime needs clone, mmap, futex,
// signals, epoll and more, and which of them it calls depends on the Go
// version, cgo and the race detector, so an allow-list would kill healthy
// workers. A refused call fails with EPERM, so code that tries one gets an
// error, not a crash. A call made with a foreign system-call ABI (i386
// int 0x80, x32) kills the process: such a call can only be an attack.
//
// It is hand-assembled with golang.org/x/net/bpf (see installSeccomp for
// why not a seccomp library) as one linear sequence, in this order:
//
//	arch != native                      -> KILL_PROCESS
//	x32 syscall bit (amd64)             -> KILL_PROCESS
//	nr in denied                        -> ERRNO(EPERM)
//	clone3                              -> ERRNO(ENOSYS) (glibc then uses clone)
//	clone, kill, tgkill, prlimit64      -> by argument (see conditional)
//	anything else                       -> ALLOW
//
// The kernel's seccomp action cache (Linux 5.11+) turns every system call
// whose verdict does not depend on its arguments into a bitmap lookup, so
// the length of the list costs nothing on the calls the worker makes.

// syscallNr is one system call the filter refuses.
type syscallNr struct {
	name string
	nr   uint32
}

// denied are the system calls refused outright (deniedArch adds those that
// exist only on this architecture).
var denied = []syscallNr{
	// Networking: no socket of any family (AF_UNIX reaches the node's own
	// socket, AF_INET the network, AF_NETLINK the kernel).
	{"socket", unix.SYS_SOCKET}, {"socketpair", unix.SYS_SOCKETPAIR}, {"connect", unix.SYS_CONNECT},
	{"bind", unix.SYS_BIND}, {"listen", unix.SYS_LISTEN}, {"accept", unix.SYS_ACCEPT}, {"accept4", unix.SYS_ACCEPT4},
	// Programs and other processes: no exec, no tracing, no reading or
	// writing another process's memory or descriptors, no signals but to
	// itself (kill/tgkill are filtered by argument below).
	{"execve", unix.SYS_EXECVE}, {"execveat", unix.SYS_EXECVEAT},
	{"ptrace", unix.SYS_PTRACE}, {"process_vm_readv", unix.SYS_PROCESS_VM_READV}, {"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
	{"kcmp", unix.SYS_KCMP}, {"pidfd_open", unix.SYS_PIDFD_OPEN}, {"pidfd_getfd", unix.SYS_PIDFD_GETFD},
	{"pidfd_send_signal", unix.SYS_PIDFD_SEND_SIGNAL}, {"process_madvise", unix.SYS_PROCESS_MADVISE},
	{"process_mrelease", unix.SYS_PROCESS_MRELEASE}, {"tkill", unix.SYS_TKILL},
	{"rt_sigqueueinfo", unix.SYS_RT_SIGQUEUEINFO}, {"rt_tgsigqueueinfo", unix.SYS_RT_TGSIGQUEUEINFO},
	{"setpriority", unix.SYS_SETPRIORITY}, {"sched_setscheduler", unix.SYS_SCHED_SETSCHEDULER},
	{"sched_setparam", unix.SYS_SCHED_SETPARAM}, {"sched_setattr", unix.SYS_SCHED_SETATTR},
	{"sched_setaffinity", unix.SYS_SCHED_SETAFFINITY}, {"ioprio_set", unix.SYS_IOPRIO_SET},
	{"migrate_pages", unix.SYS_MIGRATE_PAGES}, {"move_pages", unix.SYS_MOVE_PAGES}, {"setrlimit", unix.SYS_SETRLIMIT},
	// Identity: a worker keeps the user it was started as.
	{"setuid", unix.SYS_SETUID}, {"setgid", unix.SYS_SETGID}, {"setreuid", unix.SYS_SETREUID}, {"setregid", unix.SYS_SETREGID},
	{"setresuid", unix.SYS_SETRESUID}, {"setresgid", unix.SYS_SETRESGID}, {"setfsuid", unix.SYS_SETFSUID},
	{"setfsgid", unix.SYS_SETFSGID}, {"setgroups", unix.SYS_SETGROUPS}, {"capset", unix.SYS_CAPSET},
	// Namespaces and mounts.
	{"unshare", unix.SYS_UNSHARE}, {"setns", unix.SYS_SETNS}, {"mount", unix.SYS_MOUNT}, {"umount2", unix.SYS_UMOUNT2},
	{"pivot_root", unix.SYS_PIVOT_ROOT}, {"chroot", unix.SYS_CHROOT}, {"open_tree", unix.SYS_OPEN_TREE},
	{"open_tree_attr", unix.SYS_OPEN_TREE_ATTR}, {"move_mount", unix.SYS_MOVE_MOUNT}, {"fsopen", unix.SYS_FSOPEN},
	{"fsconfig", unix.SYS_FSCONFIG}, {"fsmount", unix.SYS_FSMOUNT}, {"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR}, {"listmount", unix.SYS_LISTMOUNT}, {"statmount", unix.SYS_STATMOUNT},
	// Kernel attack surface a Go worker never needs.
	{"bpf", unix.SYS_BPF}, {"perf_event_open", unix.SYS_PERF_EVENT_OPEN}, {"userfaultfd", unix.SYS_USERFAULTFD},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP}, {"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER}, {"keyctl", unix.SYS_KEYCTL}, {"add_key", unix.SYS_ADD_KEY},
	{"request_key", unix.SYS_REQUEST_KEY}, {"init_module", unix.SYS_INIT_MODULE}, {"finit_module", unix.SYS_FINIT_MODULE},
	{"delete_module", unix.SYS_DELETE_MODULE}, {"kexec_load", unix.SYS_KEXEC_LOAD}, {"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
	{"reboot", unix.SYS_REBOOT}, {"swapon", unix.SYS_SWAPON}, {"swapoff", unix.SYS_SWAPOFF}, {"acct", unix.SYS_ACCT},
	{"quotactl", unix.SYS_QUOTACTL}, {"quotactl_fd", unix.SYS_QUOTACTL_FD}, {"syslog", unix.SYS_SYSLOG},
	{"sethostname", unix.SYS_SETHOSTNAME}, {"setdomainname", unix.SYS_SETDOMAINNAME},
	{"settimeofday", unix.SYS_SETTIMEOFDAY}, {"clock_settime", unix.SYS_CLOCK_SETTIME},
	{"clock_adjtime", unix.SYS_CLOCK_ADJTIME}, {"adjtimex", unix.SYS_ADJTIMEX}, {"personality", unix.SYS_PERSONALITY},
	{"vhangup", unix.SYS_VHANGUP}, {"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE}, {"nfsservctl", unix.SYS_NFSSERVCTL},
	{"fanotify_init", unix.SYS_FANOTIFY_INIT}, {"fanotify_mark", unix.SYS_FANOTIFY_MARK},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT}, {"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
	{"lsm_set_self_attr", unix.SYS_LSM_SET_SELF_ATTR},
	{"splice", unix.SYS_SPLICE}, {"vmsplice", unix.SYS_VMSPLICE}, {"tee", unix.SYS_TEE},
	// System V and POSIX IPC: shared memory, queues and semaphores of other
	// processes are reachable by key or name.
	{"shmget", unix.SYS_SHMGET}, {"shmat", unix.SYS_SHMAT}, {"shmctl", unix.SYS_SHMCTL},
	{"msgget", unix.SYS_MSGGET}, {"msgsnd", unix.SYS_MSGSND}, {"msgrcv", unix.SYS_MSGRCV}, {"msgctl", unix.SYS_MSGCTL},
	{"semget", unix.SYS_SEMGET}, {"semop", unix.SYS_SEMOP}, {"semtimedop", unix.SYS_SEMTIMEDOP}, {"semctl", unix.SYS_SEMCTL},
	{"mq_open", unix.SYS_MQ_OPEN}, {"mq_unlink", unix.SYS_MQ_UNLINK}, {"mq_timedsend", unix.SYS_MQ_TIMEDSEND},
	{"mq_timedreceive", unix.SYS_MQ_TIMEDRECEIVE}, {"mq_notify", unix.SYS_MQ_NOTIFY}, {"mq_getsetattr", unix.SYS_MQ_GETSETATTR},
	// The filesystem by path: a worker opens nothing after it starts. This
	// backs Landlock up where the kernel lacks it, and covers what Landlock
	// does not restrict (stat, readlink, chmod, chown, xattrs, times).
	{"openat", unix.SYS_OPENAT}, {"openat2", unix.SYS_OPENAT2}, {"newfstatat", unix.SYS_NEWFSTATAT},
	{"statx", unix.SYS_STATX}, {"faccessat", unix.SYS_FACCESSAT}, {"faccessat2", unix.SYS_FACCESSAT2},
	{"readlinkat", unix.SYS_READLINKAT}, {"statfs", unix.SYS_STATFS}, {"chdir", unix.SYS_CHDIR},
	{"mkdirat", unix.SYS_MKDIRAT}, {"unlinkat", unix.SYS_UNLINKAT}, {"renameat2", unix.SYS_RENAMEAT2},
	{"linkat", unix.SYS_LINKAT}, {"symlinkat", unix.SYS_SYMLINKAT}, {"truncate", unix.SYS_TRUNCATE},
	{"mknodat", unix.SYS_MKNODAT}, {"fchmod", unix.SYS_FCHMOD}, {"fchmodat", unix.SYS_FCHMODAT},
	{"fchmodat2", unix.SYS_FCHMODAT2}, {"fchown", unix.SYS_FCHOWN}, {"fchownat", unix.SYS_FCHOWNAT},
	{"utimensat", unix.SYS_UTIMENSAT}, {"setxattr", unix.SYS_SETXATTR}, {"lsetxattr", unix.SYS_LSETXATTR},
	{"fsetxattr", unix.SYS_FSETXATTR}, {"removexattr", unix.SYS_REMOVEXATTR}, {"lremovexattr", unix.SYS_LREMOVEXATTR},
	{"fremovexattr", unix.SYS_FREMOVEXATTR}, {"setxattrat", unix.SYS_SETXATTRAT}, {"removexattrat", unix.SYS_REMOVEXATTRAT},
	{"getxattr", unix.SYS_GETXATTR}, {"lgetxattr", unix.SYS_LGETXATTR}, {"listxattr", unix.SYS_LISTXATTR},
	{"llistxattr", unix.SYS_LLISTXATTR}, {"getxattrat", unix.SYS_GETXATTRAT}, {"listxattrat", unix.SYS_LISTXATTRAT},
	{"file_getattr", unix.SYS_FILE_GETATTR}, {"file_setattr", unix.SYS_FILE_SETATTR},
	{"inotify_init1", unix.SYS_INOTIFY_INIT1}, {"inotify_add_watch", unix.SYS_INOTIFY_ADD_WATCH},
}

// Filtered by argument (see conditional).
var byArgument = []syscallNr{
	{"clone", unix.SYS_CLONE}, {"clone3", unix.SYS_CLONE3}, {"kill", unix.SYS_KILL}, {"tgkill", unix.SYS_TGKILL},
	{"prlimit64", unix.SYS_PRLIMIT64},
}

// nsFlags are the clone flags that would create namespaces (CLONE_NEWTIME
// is left out: for clone it is the exit signal's byte).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// Offsets in struct seccomp_data. IMPORTANT: argLo/argHi assume a
// little-endian machine (amd64, arm64).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLo(i int) uint32 { return offArgs + 8*uint32(i) }
func argHi(i int) uint32 { return argLo(i) + 4 }

var (
	retAllow  = bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	retEPERM  = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	retENOSYS = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}
	retKill   = bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS}
)

// DeniedSyscalls lists the system calls the worker filter refuses, outright
// or by argument, on this architecture.
func DeniedSyscalls() []string {
	var names []string
	for _, s := range slices.Concat(denied, deniedArch, byArgument) {
		names = append(names, s.name)
	}
	return names
}

// filter returns the program for a process whose pid is self. After the
// architecture checks it decides clone3 and the calls checked by argument,
// then looks the call up in the denied numbers merged into ranges
// (lookup). The kernel takes about 0.9 µs an instruction to install a
// filter (on top of about 0.2 ms whatever its size), on every worker
// start: a comparison per denied call made 401 instructions and 0.5-0.6
// ms; the ranges make 172.
func filter(self int) []bpf.Instruction {
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		retKill,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	p = append(p, archPrologue...)
	p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE3, SkipTrue: 1}, retENOSYS)
	// Each conditional block decides (ALLOW or EPERM) for its call: the
	// accumulator no longer holds the call number after it loads an
	// argument, so no block falls through.
	for _, c := range conditional(uint32(self)) {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: c.nr, SkipTrue: uint8(len(c.block))})
		p = append(p, c.block...)
	}
	return append(p, lookup(deniedRanges())...)
}

// nrRange is the system call numbers lo to hi, both included.
type nrRange struct{ lo, hi uint32 }

// deniedRanges returns the numbers of denied and deniedArch, sorted and
// merged into ranges of consecutive numbers.
func deniedRanges() []nrRange {
	var nrs []uint32
	for _, s := range slices.Concat(denied, deniedArch) {
		nrs = append(nrs, s.nr)
	}
	slices.Sort(nrs)
	var rs []nrRange
	for _, nr := range slices.Compact(nrs) {
		if n := len(rs); n > 0 && rs[n-1].hi+1 == nr {
			rs[n-1].hi = nr
			continue
		}
		rs = append(rs, nrRange{nr, nr})
	}
	return rs
}

// lookup returns EPERM for a call number (in the accumulator) in one of
// the ranges rs (sorted, apart) and ALLOW for any other: two comparisons
// a range, in order. A number below a range's start is in none of the
// later ones and is allowed at once, so the calls the Go runtime makes
// most (read, write, mmap, futex: low numbers) pass after a few.
func lookup(rs []nrRange) []bpf.Instruction {
	allow, deny := 2*len(rs), 2*len(rs)+1 // the last two instructions
	skip := func(from, to int) uint8 {
		if to-from-1 > 255 {
			panic("confine: too many denied ranges for one BPF jump")
		}
		return uint8(to - from - 1)
	}
	p := make([]bpf.Instruction, 0, deny+1)
	for _, r := range rs {
		at := len(p)
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: r.lo, SkipFalse: skip(at, allow)},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: r.hi, SkipFalse: skip(at+1, deny)},
		)
	}
	return append(p, retAllow, retEPERM)
}

type condBlock struct {
	nr    uint32
	block []bpf.Instruction
}

// conditional returns the argument checks:
//   - clone only makes threads (CLONE_THREAD set) and no namespaces: no
//     fork, no vfork-and-exec; the Go runtime's threads pass;
//   - kill and tgkill only signal the worker itself (the Go runtime
//     preempts its threads with tgkill and raises fatal signals with kill);
//   - prlimit64 only reads limits, of the worker itself: a worker cannot
//     raise its RLIMIT_AS, even as root.
func conditional(self uint32) []condBlock {
	return []condBlock{
		{unix.SYS_CLONE, []bpf.Instruction{
			bpf.LoadAbsolute{Off: argLo(0), Size: 4}, // clone uses the low 32 bits of flags
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipFalse: 2},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: nsFlags, SkipTrue: 1},
			retAllow,
			retEPERM,
		}},
		{unix.SYS_KILL, onlySelf(0, self)},
		{unix.SYS_TGKILL, onlySelf(0, self)},
		{unix.SYS_PRLIMIT64, []bpf.Instruction{
			bpf.LoadAbsolute{Off: argHi(2), Size: 4}, // new_limit must be NULL
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 8},
			bpf.LoadAbsolute{Off: argLo(2), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 6},
			bpf.LoadAbsolute{Off: argHi(0), Size: 4}, // pid is 0 or self
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 4},
			bpf.LoadAbsolute{Off: argLo(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: self, SkipFalse: 1},
			retAllow,
			retEPERM,
		}},
	}
}

// onlySelf allows the call when argument i (all 64 bits) is self.
func onlySelf(i int, self uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: argHi(i), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 3},
		bpf.LoadAbsolute{Off: argLo(i), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: self, SkipFalse: 1},
		retAllow,
		retEPERM,
	}
}

// applySeccomp sets no_new_privs and installs the filter on every thread
// (SECCOMP_FILTER_FLAG_TSYNC, which also sets no_new_privs on them).
//
// We write the filter with golang.org/x/net/bpf rather than use
// github.com/elastic/go-seccomp-bpf because that library sends a system
// call made with a foreign ABI (i386 int 0x80 on amd64) to the policy's
// default action, which for a deny-list is ALLOW: its i386 twins of every
// denied call would pass. Its policies also cannot say "allow kill only
// for our own pid", "clone only with CLONE_THREAD" or "ENOSYS for clone3".
// The program here is a few hundred instructions, checked by tests that
// run it in x/net/bpf's VM and by tests that make the refused calls in a
// confined worker.
func applySeccomp() SeccompReport {
	if err := installSeccomp(os.Getpid()); err != nil {
		return SeccompReport{Reason: err.Error()}
	}
	// Check it: a socket must now be refused.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return SeccompReport{Reason: "the filter was installed but socket() still succeeds"}
	}
	if err != unix.EPERM {
		return SeccompReport{Reason: fmt.Sprintf("the filter was installed but socket() failed with %v instead of EPERM", err)}
	}
	return SeccompReport{Active: true, Denied: len(denied) + len(deniedArch) + len(byArgument), Action: "EPERM"}
}

func installSeccomp(self int) error {
	raw, err := bpf.Assemble(filter(self))
	if err != nil {
		return fmt.Errorf("assembling the filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// no_new_privs and the filter on the same thread: TSYNC then copies
	// both to every other thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno == unix.ENOSYS:
		return fmt.Errorf("the kernel has no seccomp (CONFIG_SECCOMP_FILTER): %w", errno)
	case errno == unix.EINVAL:
		return fmt.Errorf("the kernel refused the filter (seccomp filters or TSYNC unsupported): %w", errno)
	case errno != 0:
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", errno)
	case r != 0:
		return fmt.Errorf("seccomp: thread %d could not be synchronised", r)
	}
	return nil
}
