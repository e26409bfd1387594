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

	"github.com/agentos-run/agentos/internal/benchutil"
)

// startBinary returns the agentos binary the start benchmarks exec:
// $AGENTOS_BENCH_BIN when set (to compare two builds side by side), else
// this package built once into a temporary directory. The test binary itself
// is not used: it links the testing packages and runs TestMain, so its start
// is not the command's.
func startBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("AGENTOS_BENCH_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "agentos")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("building agentos for the start benchmark: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkStartHelp execs `agentos help` and waits for it to exit: the
// cost of starting the command (runtime start, package initialisation) with
// nothing after it. median-µs is the median of the runs.
func BenchmarkStartHelp(b *testing.B) {
	bin := startBinary(b)
	var d []time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "help")
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
// does (the binary re-executed with AGENTOS_SANDBOX_WORKER=1, confinement
// best_effort, the default) and measures the time until its hello frame
// arrives: from then on it accepts its first run. ready-µs is the median;
// the worker is then stopped (EOF on stdin) outside the measured time.
func BenchmarkStartWorker(b *testing.B) {
	bin := startBinary(b)
	env := append(os.Environ(), "AGENTOS_SANDBOX_WORKER=1", "AGENTOS_WORKER_MEMORY=268435456", "AGENTOS_WORKER_CONFINE=best_effort")
	var d []time.Duration
	for b.Loop() {
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
		d = append(d, time.Since(t0))
		if !bytes.Contains(body, []byte(`"t":"hello"`)) {
			b.Fatalf("first frame is not a hello: %s", body)
		}
		b.StopTimer()
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("worker exit: %v (stderr: %s)", err, stderr.String())
		}
		b.StartTimer()
	}
	benchutil.ReportMedian(b, d, "ready-µs", time.Microsecond)
}
