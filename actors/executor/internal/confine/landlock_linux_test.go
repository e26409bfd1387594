package confine

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// envThreadsChild makes this test binary the child of
// TestOwnRestrictorConfinesEveryThread.
const envThreadsChild = "CONFINE_TEST_THREADS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envThreadsChild) == "1" {
		os.Exit(threadsChild())
	}
	os.Exit(m.Run())
}

// threadsChild holds eight goroutines on eight OS threads of their own,
// restricts the process with Apply's own Restrictor (Go's all-threads
// system call: this test binary links no cgo), then has each thread try
// to read a file, list / and stat a path. It prints one line per attempt
// and "report: <reason>" when Landlock was not applied.
func threadsChild() int {
	const threads = 8
	start, done := make(chan struct{}), make(chan struct{})
	results := make([]string, threads)
	var wg sync.WaitGroup
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // this goroutine's thread exists before the restriction
			<-start
			var got []string
			for _, try := range []func() error{
				func() error { _, err := os.ReadFile("/etc/hostname"); return err },
				func() error { _, err := os.ReadDir("/"); return err },
			} {
				got = append(got, fmt.Sprint(try()))
			}
			results[i] = fmt.Sprintf("thread %d (tid %d): %s", i, unix.Gettid(), strings.Join(got, "; "))
			<-done
		}()
	}
	rep := applyLandlock(allThreads)
	if !rep.Active {
		fmt.Println("report:", rep.Reason)
		return 0
	}
	close(start)
	close(done)
	wg.Wait()
	for _, r := range results {
		fmt.Println(r)
	}
	return 0
}

// TestOwnRestrictorConfinesEveryThread: the Restrictor the worker program
// uses (no cgo, no go-landlock) restricts every thread of the process,
// not only the one that applied it: threads that existed before are
// refused the filesystem too.
func TestOwnRestrictorConfinesEveryThread(t *testing.T) {
	if abi, err := landlockAsk(unix.LANDLOCK_CREATE_RULESET_VERSION); err != nil || abi < 1 {
		t.Skipf("this kernel has no Landlock (%v)", err)
	}
	if _, err := os.ReadFile("/etc/hostname"); err != nil {
		t.Skipf("the probe file cannot be read even unconfined: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), envThreadsChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_GETPID, 0, 0, 0); errno == syscall.ENOTSUP {
		// This test binary links cgo (the race detector does): the own
		// path must refuse, saying what to do, rather than confine some
		// threads only.
		if !strings.Contains(string(out), "links cgo") || !strings.Contains(string(out), "MUST pass its own confine.Restrictor") {
			t.Fatalf("in a program that links cgo the own Restrictor did not refuse with its reason:\n%s", out)
		}
		t.Skip("this test binary links cgo (-race does), where Go's all-threads system call is refused; it refused as it must")
	}
	if len(lines) != 8 {
		t.Fatalf("want 8 threads' results, got:\n%s", out)
	}
	tids := map[string]bool{}
	for _, l := range lines {
		if strings.Count(l, syscall.EACCES.Error()) != 2 {
			t.Errorf("a thread was not confined: %s", l)
		}
		tids[strings.Fields(l)[3]] = true
	}
	if len(tids) != 8 {
		t.Errorf("the attempts ran on %d threads, not 8:\n%s", len(tids), out)
	}
}
