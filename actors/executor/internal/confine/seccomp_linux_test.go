//go:build linux && (amd64 || arm64)

package confine

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const self = 4242

// verdict runs the filter in x/net/bpf's VM on one system call. The VM
// loads words big-endian, the kernel native-endian: the seccomp_data words
// are written big-endian here so that each 32-bit load sees the value the
// kernel would.
func verdict(t *testing.T, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(filter(self))
	if err != nil {
		t.Fatalf("the filter does not assemble: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], nr)
	binary.BigEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[argLo(i):], uint32(a))
		binary.BigEndian.PutUint32(data[argHi(i):], uint32(a>>32))
	}
	v, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	kill   = unix.SECCOMP_RET_KILL_PROCESS
)

func TestFilterDeniesTheListAndAllowsTheRest(t *testing.T) {
	for _, s := range append(append([]syscallNr{}, denied...), deniedArch...) {
		if got := verdict(t, auditArch, s.nr); got != eperm {
			t.Errorf("%s: verdict %#x, want EPERM", s.name, got)
		}
	}
	// What the Go runtime and the worker protocol use must pass.
	for name, nr := range map[string]uint32{
		"read": unix.SYS_READ, "write": unix.SYS_WRITE, "futex": unix.SYS_FUTEX, "mmap": unix.SYS_MMAP,
		"munmap": unix.SYS_MUNMAP, "madvise": unix.SYS_MADVISE, "mprotect": unix.SYS_MPROTECT,
		"epoll_pwait": unix.SYS_EPOLL_PWAIT, "nanosleep": unix.SYS_NANOSLEEP, "sched_yield": unix.SYS_SCHED_YIELD,
		"getpid": unix.SYS_GETPID, "gettid": unix.SYS_GETTID, "rt_sigaction": unix.SYS_RT_SIGACTION,
		"rt_sigprocmask": unix.SYS_RT_SIGPROCMASK, "rt_sigreturn": unix.SYS_RT_SIGRETURN,
		"sigaltstack": unix.SYS_SIGALTSTACK, "exit_group": unix.SYS_EXIT_GROUP, "exit": unix.SYS_EXIT,
		"close": unix.SYS_CLOSE, "pread64": unix.SYS_PREAD64, "fstat": unix.SYS_FSTAT,
		"sched_getaffinity": unix.SYS_SCHED_GETAFFINITY, "set_robust_list": unix.SYS_SET_ROBUST_LIST,
		"rseq": unix.SYS_RSEQ, "clock_gettime": unix.SYS_CLOCK_GETTIME, "getrandom": unix.SYS_GETRANDOM,
	} {
		if got := verdict(t, auditArch, nr); got != allow {
			t.Errorf("%s: verdict %#x, want ALLOW", name, got)
		}
	}
}

// TestFilterDecidesEveryNumber: for every system call number up to 1,023
// (the highest today is under 500) and a few far beyond, the verdict is
// exactly the lists': EPERM for a denied call, ENOSYS for clone3, ALLOW for
// the rest. The calls checked by argument are TestFilterByArgument's.
func TestFilterDecidesEveryNumber(t *testing.T) {
	want := map[uint32]uint32{unix.SYS_CLONE3: enosys}
	for _, s := range append(append([]syscallNr{}, denied...), deniedArch...) {
		want[s.nr] = eperm
	}
	byArg := map[uint32]bool{}
	for _, s := range byArgument {
		byArg[s.nr] = true
	}
	nrs := []uint32{1 << 20, 0x3fffffff}
	for nr := uint32(0); nr < 1024; nr++ {
		nrs = append(nrs, nr)
	}
	for _, nr := range nrs {
		if byArg[nr] {
			continue
		}
		w, ok := want[nr]
		if !ok {
			w = allow
		}
		if got := verdict(t, auditArch, nr); got != w {
			t.Errorf("system call %d: verdict %#x, want %#x", nr, got, w)
		}
	}
	if n := len(filter(self)); n > 200 {
		t.Errorf("the filter has %d instructions: the kernel takes about 0.9 µs each to install it, on every worker start", n)
	}
}

func TestFilterKillsForeignABIs(t *testing.T) {
	// An i386 (or AArch32) call reports another arch: its numbers are
	// different, so a deny-list that let it through would be void.
	if got := verdict(t, unix.AUDIT_ARCH_I386, 102 /* socketcall */); got != kill {
		t.Errorf("i386 socketcall: verdict %#x, want KILL_PROCESS", got)
	}
	if got := verdict(t, unix.AUDIT_ARCH_ARM, 281 /* socket */); got != kill {
		t.Errorf("arm socket: verdict %#x, want KILL_PROCESS", got)
	}
	if auditArch == unix.AUDIT_ARCH_X86_64 {
		if got := verdict(t, auditArch, 0x40000000|41 /* x32 socket */); got != kill {
			t.Errorf("x32 socket: verdict %#x, want KILL_PROCESS", got)
		}
	}
}

func TestFilterByArgument(t *testing.T) {
	const thread = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD
	cases := []struct {
		name string
		nr   uint32
		args []uint64
		want uint32
	}{
		{"clone a thread (Go runtime)", unix.SYS_CLONE, []uint64{thread}, allow},
		{"clone a thread (glibc)", unix.SYS_CLONE, []uint64{thread | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID}, allow},
		{"fork via clone", unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, eperm},
		{"vfork+exec via clone (os/exec)", unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, eperm},
		{"thread in a new user namespace", unix.SYS_CLONE, []uint64{thread | unix.CLONE_NEWUSER}, eperm},
		{"thread in a new network namespace", unix.SYS_CLONE, []uint64{thread | unix.CLONE_NEWNET}, eperm},
		{"clone3", unix.SYS_CLONE3, nil, enosys},
		{"kill self", unix.SYS_KILL, []uint64{self, 9}, allow},
		{"kill the parent", unix.SYS_KILL, []uint64{self - 1, 9}, eperm},
		{"kill the process group", unix.SYS_KILL, []uint64{0, 9}, eperm},
		{"kill everyone", unix.SYS_KILL, []uint64{^uint64(0), 9}, eperm},
		{"kill self with high bits set", unix.SYS_KILL, []uint64{1<<32 | self, 9}, eperm},
		{"tgkill own thread", unix.SYS_TGKILL, []uint64{self, self + 3, 23}, allow},
		{"tgkill another process", unix.SYS_TGKILL, []uint64{self + 1, self + 1, 9}, eperm},
		{"prlimit64 read own", unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_NOFILE, 0, 0x1000}, allow},
		{"prlimit64 read own by pid", unix.SYS_PRLIMIT64, []uint64{self, unix.RLIMIT_AS, 0, 0x1000}, allow},
		{"prlimit64 raise own RLIMIT_AS", unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_AS, 0x1000, 0}, eperm},
		{"prlimit64 new limit above 4 GiB address", unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_AS, 1 << 40, 0}, eperm},
		{"prlimit64 read another process", unix.SYS_PRLIMIT64, []uint64{self + 1, unix.RLIMIT_AS, 0, 0x1000}, eperm},
	}
	for _, c := range cases {
		if got := verdict(t, auditArch, c.nr, c.args...); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
}

func TestDeniedSyscallsAreUnique(t *testing.T) {
	seen := map[uint32]string{}
	for _, s := range append(append(append([]syscallNr{}, denied...), deniedArch...), byArgument...) {
		if prev, ok := seen[s.nr]; ok {
			t.Errorf("%s and %s share number %d", prev, s.name, s.nr)
		}
		seen[s.nr] = s.name
	}
	if n := len(filter(self)); n > 4096 {
		t.Fatalf("the filter has %d instructions; the kernel takes at most 4096", n)
	}
}
