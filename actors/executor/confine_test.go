package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
)

// Test-only environment of a worker (see testHooks).
const (
	envTestEscape = "AGENTOS_TEST_ESCAPE" // JSON escapeTargets: try to escape after confinement
	envTestHide   = "AGENTOS_TEST_HIDE"   // "landlock" or "seccomp": the worker's kernel "lacks" it
	envTestVictim = "AGENTOS_TEST_VICTIM" // "1": sleep, as a process a worker may try to trace
	envTestRogue  = "AGENTOS_TEST_ROGUE"  // "result" or "logs": answer every run with that much output (flood_test.go)
)

// testHooks runs first in TestMain, in the test binary and in the workers
// it starts.
func testHooks() {
	if os.Getenv(envTestVictim) == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if !IsWorker() {
		return
	}
	if how := os.Getenv(envTestRogue); how != "" {
		rogueWorker(how)
	}
	switch os.Getenv(envTestHide) {
	case "landlock":
		hideSyscalls(unix.SYS_LANDLOCK_CREATE_RULESET, unix.SYS_LANDLOCK_ADD_RULE, unix.SYS_LANDLOCK_RESTRICT_SELF)
	case "seccomp":
		hideSyscalls(unix.SYS_SECCOMP)
	}
	if s := os.Getenv(envTestEscape); s != "" {
		var tg escapeTargets
		if err := json.Unmarshal([]byte(s), &tg); err != nil {
			panic(err)
		}
		testEscape = func() json.RawMessage {
			b, _ := json.Marshal(tg.attempt())
			return b
		}
	}
}

// escapeTargets is what an escaped tool goes after: things the worker's
// user can reach when the worker is not confined.
type escapeTargets struct {
	File   string  // a file of the user's (read, stat, chmod)
	Dir    string  // a directory of the user's (write)
	TCP    string  // a listening loopback TCP address
	Unix   string  // a listening UNIX socket (like the node's control socket)
	Victim int     // another process of the user (signal, trace)
	Parent int     // the parent's pid
	Addr   uintptr // an address in the parent's memory (holding parentSecret)
	Len    int
}

// parentSecret is what process_vm_readv tries to read out of the parent.
var parentSecret = [16]byte{'s', 'e', 'c', 'r', 'e', 't'}

// attempt makes each escape and reports "ok" or the error it got. It runs
// as Go code inside the worker: what a tool that escaped goja could do.
func (tg escapeTargets) attempt() map[string]string {
	res := map[string]string{}
	try := func(name string, f func() error) {
		if err := f(); err != nil {
			res[name] = err.Error()
		} else {
			res[name] = "ok"
		}
	}
	try("read_file", func() error { _, err := os.ReadFile(tg.File); return err })
	try("read_etc_passwd", func() error { _, err := os.ReadFile("/etc/passwd"); return err })
	try("list_root", func() error { _, err := os.ReadDir("/"); return err })
	try("stat_file", func() error { _, err := os.Stat(tg.File); return err })
	try("write_file", func() error { return os.WriteFile(filepath.Join(tg.Dir, "escaped.txt"), []byte("x"), 0o644) })
	try("chmod_file", func() error { return os.Chmod(tg.File, 0o666) })
	try("dial_tcp", func() error {
		c, err := net.DialTimeout("tcp", tg.TCP, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	try("dial_unix", func() error {
		c, err := net.DialTimeout("unix", tg.Unix, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	try("exec", func() error {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{} // not a worker: it runs no test and exits 0
		// Descriptors the worker holds, so that the attempt reaches
		// fork and execve (it would stop at opening /dev/null otherwise).
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr, os.Stderr
		return cmd.Run()
	})
	try("signal_parent", func() error { return syscall.Kill(tg.Parent, 0) })
	try("signal_victim", func() error { return syscall.Kill(tg.Victim, 0) })
	try("ptrace_victim", func() error { return unix.PtraceSeize(tg.Victim) }) // detached when the worker exits
	try("read_parent_memory", func() error {
		buf := make([]byte, tg.Len)
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(tg.Len)}}
		remote := []unix.RemoteIovec{{Base: tg.Addr, Len: tg.Len}}
		if _, err := unix.ProcessVMReadv(tg.Parent, local, remote, 0); err != nil {
			return err
		}
		if !strings.HasPrefix(string(buf), "secret") {
			return fmt.Errorf("read %q, not the secret", buf)
		}
		return nil
	})
	try("set_rlimit_as", func() error { // to its current value: raising needs CAP_SYS_RESOURCE
		var lim unix.Rlimit
		if err := unix.Prlimit(0, unix.RLIMIT_AS, nil, &lim); err != nil {
			return err
		}
		return unix.Prlimit(0, unix.RLIMIT_AS, &lim, nil)
	})
	try("io_uring_setup", func() error {
		var params [120]byte
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno != 0 {
			return errno
		}
		return unix.Close(int(fd))
	})
	try("unshare_uts", func() error {
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		return unix.Unshare(unix.CLONE_NEWUTS)
	})
	return res
}

// startVictim starts a process of the same user for a worker to go after.
func startVictim(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envTestVictim+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// listen serves TCP and UNIX-socket listeners that accept and close.
func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l
}

// escapeFrom starts a worker in mode whose "escaped tool" goes after real
// targets, and returns what it reported in force and what each attempt got.
func escapeFrom(t *testing.T, mode Confine) (Protections, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.env")
	if err := os.WriteFile(file, []byte("KEY=value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := escapeTargets{
		File: file, Dir: dir, TCP: listen(t, "tcp", "127.0.0.1:0").Addr().String(),
		Unix:   listen(t, "unix", filepath.Join(dir, "node.sock")).Addr().String(),
		Victim: startVictim(t), Parent: os.Getpid(),
		Addr: uintptr(unsafe.Pointer(&parentSecret[0])), Len: len(parentSecret),
	}
	b, _ := json.Marshal(tg)
	t.Setenv(envTestEscape, string(b))
	p := &pool{opts: Options{Confine: mode, Limits: Limits{MemoryBytes: 128 << 20}.WithDefaults()}, all: map[*worker]struct{}{}}
	w, err := p.spawn()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.stdin.Close(); p.wg.Wait() }()
	hello, err := readFrame(w.out)
	if err != nil || hello.T != "hello" {
		t.Fatalf("no hello from the worker (%v): %s", err, w.stderr)
	}
	probe, err := readFrame(w.out)
	if err != nil || probe.T != "probe" {
		t.Fatalf("no probe from the worker (%v): %s", err, w.stderr)
	}
	var res map[string]string
	if err := json.Unmarshal(probe.Val, &res); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(&parentSecret)
	return *hello.Prot, res
}

// landlockABI is the kernel's Landlock ABI (0: none).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// TestConfinedWorkerRefusesEscapes is the attack of issue 10 item 14: code
// that escaped goja runs as Go inside the worker. Unconfined, as the same
// user, it reads and changes the user's files, reaches the network and the
// node's socket, runs programs, signals, traces and reads other processes,
// and changes its own limits. Each layer alone (on a kernel that "lacks"
// the other) refuses what it covers; both together refuse everything.
func TestConfinedWorkerRefusesEscapes(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the worker filter is for linux/amd64 and linux/arm64")
	}
	abi := landlockABI()
	if abi < 1 {
		t.Skip("this kernel has no Landlock: the escape test needs every layer")
	}
	root := os.Getuid() == 0
	var attempts int
	t.Run("off", func(t *testing.T) {
		prot, res := escapeFrom(t, ConfineOff)
		if prot.Landlock.Active || prot.Seccomp.Active || prot.NoNewPrivs {
			t.Fatalf("confinement off, yet reported active: %+v", prot)
		}
		attempts = len(res)
		for name, got := range res {
			switch {
			case got == "ok":
			case name == "io_uring_setup": // may be disabled by sysctl
			case !root && (name == "ptrace_victim" || name == "read_parent_memory" || name == "unshare_uts"):
			default:
				t.Errorf("unconfined %s failed (%s): the attack must work without confinement, or the test proves nothing", name, got)
			}
		}
	})
	refused := func(t *testing.T, layer string, res map[string]string, names ...string) {
		t.Helper()
		if len(res) != attempts {
			t.Fatalf("%d attempts reported, %d unconfined: %v", len(res), attempts, res)
		}
		for _, name := range names {
			got, ok := res[name]
			switch {
			case !ok:
				t.Errorf("%s: no attempt %s", layer, name)
			case got == "ok":
				t.Errorf("%s: %s succeeded; it must be refused", layer, name)
			case !strings.Contains(got, "operation not permitted") && !strings.Contains(got, "permission denied"):
				t.Errorf("%s: %s failed with %q, want EPERM or EACCES", layer, name, got)
			}
		}
	}
	all := func(res map[string]string) []string {
		var names []string
		for name := range res {
			names = append(names, name)
		}
		return names
	}
	t.Run("landlock_only", func(t *testing.T) {
		t.Setenv(envTestHide, "seccomp")
		prot, res := escapeFrom(t, ConfineBestEffort)
		if !prot.Landlock.Active || prot.Seccomp.Active || !prot.NoNewPrivs {
			t.Fatalf("Landlock alone: %+v", prot)
		}
		// Landlock covers opening files and programs, tracing other
		// processes, TCP (ABI 4+) and signals (ABI 6+); stat, chmod,
		// UNIX sockets by path, limits and namespaces are seccomp's.
		want := []string{"read_file", "read_etc_passwd", "list_root", "write_file", "exec", "ptrace_victim", "read_parent_memory"}
		if abi >= 4 {
			want = append(want, "dial_tcp")
		}
		if abi >= 6 {
			want = append(want, "signal_parent", "signal_victim")
		}
		refused(t, "Landlock", res, want...)
		t.Logf("Landlock ABI %d alone also refused: %v", abi, res)
	})
	t.Run("seccomp_only", func(t *testing.T) {
		t.Setenv(envTestHide, "landlock")
		prot, res := escapeFrom(t, ConfineBestEffort)
		if prot.Landlock.Active || !prot.Seccomp.Active || !prot.NoNewPrivs {
			t.Fatalf("seccomp alone: %+v", prot)
		}
		refused(t, "seccomp", res, all(res)...)
		t.Logf("seccomp alone: %v", res)
	})
	t.Run("best_effort", func(t *testing.T) {
		prot, res := escapeFrom(t, ConfineBestEffort)
		if !prot.Complete() || !prot.RlimitAS.Active {
			t.Fatalf("on a kernel with Landlock ABI %d, protections in force: %+v", abi, prot)
		}
		refused(t, "both layers", res, all(res)...)
	})
}

// TestWorkerReportsProtections: an executor learns from its workers what is
// in force, and every existing kind of run still works confined.
func TestWorkerReportsProtections(t *testing.T) {
	e := newExec(t, IsolationProcess, map[string]string{"tools/math/fib.ts": fibTool})
	wantResult(t, run(t, e, "tools/math/fib.ts", `{"n": 10}`), "55")
	prot, ok := e.Protections()
	if !ok {
		t.Fatal("no protections reported after a run")
	}
	if prot.Mode != ConfineBestEffort || !prot.RlimitAS.Active {
		t.Fatalf("%+v", prot)
	}
	if landlockABI() > 0 && (!prot.Landlock.Active || prot.Landlock.ABI < 1 || !prot.Seccomp.Active || !prot.NoNewPrivs) {
		t.Fatalf("this kernel has Landlock ABI %d, yet: %+v", landlockABI(), prot)
	}
	in := newExec(t, IsolationInProcess, nil)
	if _, ok := in.Protections(); ok {
		t.Fatal("an in-process executor reports worker protections")
	}
}

// hideSyscalls makes this process's kernel look like one without the system
// calls nrs: a seccomp filter (all threads) answers them ENOSYS.
func hideSyscalls(nrs ...uint32) {
	ins := []bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 4}}
	for i, nr := range nrs {
		ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(nrs) - i)})
	}
	ins = append(ins, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	prog, err := bpf.Assemble(ins)
	if err != nil {
		panic(err)
	}
	f := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		f[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		panic(err)
	}
	fp := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fp))); errno != 0 {
		panic(errno)
	}
}

// TestConfineWithoutLandlock: on a kernel without Landlock, best effort
// runs tools (seccomp still in force) and says what is missing; required
// refuses to run them, with a message naming what is missing.
func TestConfineWithoutLandlock(t *testing.T) {
	t.Setenv(envTestHide, "landlock")
	files := map[string]string{"tools/math/fib.ts": fibTool}

	best := newExec(t, IsolationProcess, files)
	wantResult(t, run(t, best, "tools/math/fib.ts", `{"n": 10}`), "55")
	prot, ok := best.Protections()
	if !ok || prot.Landlock.Active || !strings.Contains(prot.Landlock.Reason, "no Landlock") || !prot.Seccomp.Active || !prot.NoNewPrivs {
		t.Fatalf("best effort without Landlock: %+v", prot)
	}

	req := newExec(t, IsolationProcess, files, func(o *Options) { o.Confine = ConfineRequired })
	r := run(t, req, "tools/math/fib.ts", `{"n": 10}`)
	wantKind(t, r, sandbox.KindCrash, "refused to start")
	if !strings.Contains(r.Error.Message, "Landlock: the kernel has no Landlock") {
		t.Fatalf("the message does not say what is missing: %s", r.Error.Message)
	}
	_, err := Probe(context.Background(), Options{Confine: ConfineRequired})
	if err == nil || !strings.Contains(err.Error(), "no Landlock") {
		t.Fatalf("Probe in required mode without Landlock: %v", err)
	}
}

func TestProbe(t *testing.T) {
	prot, err := Probe(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("protections: %+v", prot)
	if prot.Mode != ConfineBestEffort || !prot.RlimitAS.Active {
		t.Fatalf("%+v", prot)
	}
	if landlockABI() > 0 && !prot.Complete() {
		t.Fatalf("Landlock ABI %d, yet incomplete: %s", landlockABI(), prot.Missing())
	}
	if _, err := Probe(context.Background(), Options{Confine: "strict"}); err == nil || !strings.Contains(err.Error(), "best_effort") {
		t.Fatalf("unknown mode: %v", err)
	}
	if _, err := New(Options{Root: t.TempDir(), Confine: "strict"}); err == nil {
		t.Fatal("New accepted an unknown confine mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Probe(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled probe: %v", err)
	}
}
