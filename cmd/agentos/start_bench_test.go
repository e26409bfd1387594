package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/benchutil"
)

// startBinary returns the agentos binary the start benchmarks exec:
// $AGENTOS_BENCH_BIN when set (to compare two builds side by side), else
// agentos and agentos-worker built once together into a temporary
// directory. The test binary itself is not used: it links the testing
// packages and runs TestMain, so its start is not the command's.
func startBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("AGENTOS_BENCH_BIN"); bin != "" {
		return bin
	}
	dir := b.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/agentos", "./cmd/agentos-worker")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building agentos for the start benchmark: %v\n%s", err, out)
	}
	return filepath.Join(dir, "agentos")
}

// BenchmarkStartHelp execs `agentos help` and waits for it to exit: the
// cost of starting the command (runtime start, package initialisation) with
// nothing after it. median-µs is the median of the runs.
func BenchmarkStartHelp(b *testing.B) {
	benchExit(b, startBinary(b), "help")
}

// benchExit execs bin with args until it exits, b.N times, and reports the
// median as median-µs.
func benchExit(b *testing.B, bin string, args ...string) {
	var d []time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		cmd.Stdout = io.Discard
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	benchutil.ReportMedian(b, d, "median-µs", time.Microsecond)
}

// BenchmarkStartWorker starts a sandbox worker the way the executor's pool
// does (AGENTOS_SANDBOX_WORKER=1, confinement best_effort, the default)
// and measures the time until its hello frame arrives: from then on it
// accepts its first run. "agentos-worker" is the worker binary beside
// agentos (what the pool starts when it is there and of the same build),
// "agentos" is agentos re-executed (what it starts otherwise). ready-µs is
// the median; the worker is then stopped (EOF on stdin) outside the
// measured time.
func BenchmarkStartWorker(b *testing.B) {
	bin := startBinary(b)
	for _, prog := range []string{executor.WorkerBinaryName, "agentos"} {
		b.Run(prog, func(b *testing.B) {
			path := filepath.Join(filepath.Dir(bin), prog)
			if _, err := os.Stat(path); err != nil {
				b.Skipf("no %s beside %s: %v", prog, bin, err)
			}
			benchStartWorker(b, path, workerEnv())
		})
	}
}

// workerEnv is the environment the executor's pool starts a worker with.
func workerEnv() []string {
	return append(os.Environ(), "AGENTOS_SANDBOX_WORKER=1", "AGENTOS_WORKER_MEMORY=268435456", "AGENTOS_WORKER_CONFINE=best_effort")
}

// benchStartWorker starts bin with env b.N times and reports the median
// time until its hello frame as ready-µs.
func benchStartWorker(b *testing.B, bin string, env []string) {
	var d []time.Duration
	for b.Loop() {
		d = append(d, startWorkerOnce(b, bin, env))
	}
	benchutil.ReportMedian(b, d, "ready-µs", time.Microsecond)
}

// startWorkerOnce starts the worker bin, waits for its hello (the time
// returned), then stops it with the timer stopped.
func startWorkerOnce(b *testing.B, bin string, env []string) time.Duration {
	cmd := exec.Command(bin)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		b.Fatalf("no hello from the worker: %v (stderr: %s)", err, stderr.String())
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		b.Fatal(err)
	}
	took := time.Since(t0)
	if !bytes.Contains(body, []byte(`"t":"hello"`)) {
		b.Fatalf("first frame is not a hello: %s", body)
	}
	b.StopTimer()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("worker exit: %v (stderr: %s)", err, stderr.String())
	}
	b.StartTimer()
	return took
}

// BenchmarkStartFloor is the start benchmarks' floor, to run in the same
// window (docs/PERFORMANCE.md, issue 28's goal 5): Go programs that do
// nothing but start, built by the same toolchain and timed the same way.
//
//   - cgo: a hello world that links cgo, as agentos must (tree-sitter),
//     run until it exits, as BenchmarkStartHelp runs `agentos help`;
//   - pure: a program without cgo, as agentos-worker is, that writes a
//     worker's hello frame and waits for EOF, timed as BenchmarkStartWorker
//     times a worker (until the frame arrives).
func BenchmarkStartFloor(b *testing.B) {
	b.Run("cgo", func(b *testing.B) {
		benchExit(b, buildFloor(b, "1", floorCgo))
	})
	b.Run("pure", func(b *testing.B) {
		benchStartWorker(b, buildFloor(b, "0", floorPure), nil)
	})
}

const floorCgo = `package main

// static int answer(void) { return 42; }
import "C"

import "os"

func main() {
	if C.answer() != 42 {
		os.Exit(1)
	}
	os.Stdout.WriteString("hello\n")
}
`

const floorPure = `package main

import (
	"io"
	"os"
)

func main() {
	body := []byte(` + "`" + `{"t":"hello"}` + "`" + `)
	os.Stdout.Write(append([]byte{0, 0, 0, byte(len(body))}, body...))
	io.Copy(io.Discard, os.Stdin)
}
`

// buildFloor builds src as a module of its own with CGO_ENABLED=cgo and
// returns the binary's path.
func buildFloor(b *testing.B, cgo, src string) string {
	b.Helper()
	dir := b.TempDir()
	for name, text := range map[string]string{"go.mod": "module startfloor\n", "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", "floor", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the start floor (CGO_ENABLED=%s): %v\n%s", cgo, err, out)
	}
	return filepath.Join(dir, "floor")
}
