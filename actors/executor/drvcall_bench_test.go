package executor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/journal"
)

// readLoopTool reads data.txt n times through tgp.read_file: the shape of
// the peer's journal benchmark (a whole program reading through its driver
// and a journal), here a real tool run through the executor.
const readLoopTool = "export default async (a: { n: number }) => { let s = 0; for (let i = 0; i < a.n; i++) s += (await tgp.read_file('data.txt')).length; return s; };\n"

// readToolLoopTool is readLoopTool reading a file of the tool tree
// (/lib/data.txt): read once, then answered from the run's snapshot in
// process (snapshot.go).
const readToolLoopTool = "export default async (a: { n: number }) => { let s = 0; for (let i = 0; i < a.n; i++) s += (await tgp.read_file('/lib/data.txt')).length; return s; };\n"

// awaitLoopTool awaits a 16-character string n times and makes no call: the
// floor of any call a tool awaits (goja's promise and job machinery), in
// the same shape as readLoopTool.
const awaitLoopTool = "export default async (a: { n: number }) => { let s = 0; for (let i = 0; i < a.n; i++) s += (await '0123456789abcdef').length; return s; };\n"

// clockLoopTool reads the clock n times (Date.now: one clock.now call each).
const clockLoopTool = "export default async (a: { n: number }) => { let s = 0; for (let i = 0; i < a.n; i++) s += Date.now() > 0 ? 16 : 0; return s; };\n"

// callsPerRun is how many tgp.read_file calls one benchmarked run makes.
const callsPerRun = 2000

// BenchmarkJournaledReadFile runs a tool making callsPerRun tgp.read_file
// calls, recorded in a bbolt journal in the default GroupCommit mode, in
// each isolation mode; then replays the recorded run (the journal's load
// included). It reports calls/s. The pipe-floor sub-benchmark measures, in
// the same run, a raw 128-byte round trip between this process and a Go
// child over pipes: the floor of any design that waits for the parent on
// every call. The read-floor sub-benchmark reads the same file in a bare Go
// loop: the floor of any call that really reads it.
func BenchmarkJournaledReadFile(b *testing.B) {
	b.Run("pipe-floor", benchPipeFloor)
	b.Run("read-floor", benchReadFloor)
	for _, mode := range modes {
		// write-each: each record handed to the OS before use, never
		// fsynced (agent-OS's journal's shape).
		for _, d := range []journal.Durability{journal.GroupCommit, journal.SyncEach, journal.WriteEach} {
			b.Run(fmt.Sprintf("%s/%s/record", mode, d), func(b *testing.B) { benchReadLoop(b, mode, d, false) })
		}
		b.Run(fmt.Sprintf("%s/replay", mode), func(b *testing.B) { benchReadLoop(b, mode, journal.GroupCommit, true) })
		// The same loop reading a file of the tool tree (/lib).
		b.Run(fmt.Sprintf("%s/group-commit/record-tools", mode), func(b *testing.B) { benchLoop(b, mode, readToolLoopTool, journal.GroupCommit, false) })
		b.Run(fmt.Sprintf("%s/replay-tools", mode), func(b *testing.B) { benchLoop(b, mode, readToolLoopTool, journal.GroupCommit, true) })
		b.Run(fmt.Sprintf("%s/await-floor", mode), func(b *testing.B) { benchLoop(b, mode, awaitLoopTool, journal.GroupCommit, false) })
	}
}

// BenchmarkJournaledClock is BenchmarkJournaledReadFile's record and
// replay with Date.now() in the loop: clock.now calls, which a worker
// answers itself and streams to the journal unless it is SyncEach.
func BenchmarkJournaledClock(b *testing.B) {
	for _, mode := range modes {
		for _, d := range []journal.Durability{journal.GroupCommit, journal.SyncEach} {
			b.Run(fmt.Sprintf("%s/%s/record", mode, d), func(b *testing.B) { benchLoop(b, mode, clockLoopTool, d, false) })
		}
		b.Run(fmt.Sprintf("%s/replay", mode), func(b *testing.B) { benchLoop(b, mode, clockLoopTool, journal.GroupCommit, true) })
	}
}

func benchReadLoop(b *testing.B, mode Isolation, d journal.Durability, replay bool) {
	benchLoop(b, mode, readLoopTool, d, replay)
}

// benchLoop records (or replays) tool, a loop of n driver calls returning
// 16n, and reports calls/s.
func benchLoop(b *testing.B, mode Isolation, tool string, d journal.Durability, replay bool) {
	e := newExec(b, mode, map[string]string{"tools/read.ts": tool, "data.txt": "0123456789abcdef", "tools/data.txt": "0123456789abcdef"}, func(o *Options) {
		o.Workers = 1
		o.Limits.Timeout = 10 * time.Minute
	})
	jpath := filepath.Join(b.TempDir(), "journal.db")
	j, err := journal.Open(jpath, journal.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { j.Close() }()
	n := callsPerRun
	if d == journal.SyncEach {
		n = 100 // an fdatasync each
	}
	req := Request{Path: "tools/read.ts", Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))}
	res, id, err := Record(context.Background(), e, j, req) // warm up, and the run replayed
	if err != nil || !res.Success || string(res.Result) != fmt.Sprint(16*n) {
		b.Fatalf("%v %+v", err, res)
	}
	calls := 0
	cpu := benchutil.CPUTime() // this process only: a worker's CPU is not counted
	start := time.Now()
	for b.Loop() {
		if replay {
			// The journal is opened again each time: loading it is part
			// of a replay. Read-only, as 'agentos replay' opens it.
			j.Close()
			if j, err = journal.Open(jpath, journal.Options{ReadOnly: true}); err != nil {
				b.Fatal(err)
			}
			rep, err := Replay(context.Background(), e, j, id, nil)
			if err != nil || !rep.Same || rep.Divergence != nil {
				b.Fatalf("%v %+v", err, rep)
			}
		} else if res, _, err := Record(context.Background(), e, j, req); err != nil || !res.Success {
			b.Fatalf("%v %+v", err, res)
		}
		calls += n
	}
	b.ReportMetric(float64(calls)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric(float64(benchutil.CPUTime()-cpu)/float64(time.Microsecond)/float64(calls), "host-cpu-µs/call")
}

// envPipeEcho makes the test binary a pipe echo server (benchPipeFloor).
const envPipeEcho = "AGENTOS_TEST_PIPE_ECHO"

// pipeEchoMain serves as the echo child of benchPipeFloor when asked:
// 4-byte length-prefixed frames from stdin, written back unchanged.
func pipeEchoMain() {
	if os.Getenv(envPipeEcho) != "1" {
		return
	}
	in, out := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	buf := make([]byte, 4+1024)
	for {
		if _, err := io.ReadFull(in, buf[:4]); err != nil {
			os.Exit(0)
		}
		n := binary.BigEndian.Uint32(buf[:4])
		if _, err := io.ReadFull(in, buf[4:4+n]); err != nil {
			os.Exit(1)
		}
		out.Write(buf[:4+n])
		out.Flush()
	}
}

// benchPipeFloor measures 128-byte round trips to a Go child over pipes.
// benchReadFloor reads the benchmark's 16-byte file in a bare Go loop in
// the fewest system calls there are (open, read, close; no fstat, no
// os.File): the floor of any tgp.read_file that really reads the file, with
// no sandbox, driver or journal, measured in the same run. It reports
// reads/s as calls/s.
func benchReadFloor(b *testing.B) {
	p := filepath.Join(b.TempDir(), "data.txt")
	if err := os.WriteFile(p, []byte("0123456789abcdef"), 0o644); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64)
	start := time.Now()
	for b.Loop() {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		n, err := syscall.Read(fd, buf)
		syscall.Close(fd)
		if err != nil || n != 16 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

func benchPipeFloor(b *testing.B) {
	rt := pipeEcho(b)
	start := time.Now()
	for b.Loop() {
		rt()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// pipeEcho starts the echo child and returns one 128-byte round trip to
// it; the child is stopped when b ends.
func pipeEcho(b *testing.B) (roundTrip func()) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envPipeEcho+"=1")
	w, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close(); cmd.Wait() })
	msg := make([]byte, 4+124)
	binary.BigEndian.PutUint32(msg, 124)
	back := make([]byte, len(msg))
	rt := func() {
		if _, err := w.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, back); err != nil {
			b.Fatal(err)
		}
	}
	rt() // the child has started
	return rt
}

// BenchmarkPipeRoundTripAfterWork is the pipe floor's round trip when the
// child has idled while the parent worked (a busy loop of the given
// length), as a sandbox worker idles between two runs: on a VM
// whose idle vCPU halts, waking it costs more than the round trip itself.
// It reports the median round trip (median-ns/op; ns/op counts the work).
//
//	go test -run '^$' -bench PipeRoundTripAfterWork -benchtime 2000x ./actors/executor/
func BenchmarkPipeRoundTripAfterWork(b *testing.B) {
	for _, gap := range []time.Duration{0, 100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond} {
		b.Run(fmt.Sprintf("after-%v", gap), func(b *testing.B) {
			rt := pipeEcho(b)
			var laps benchutil.Laps
			defer laps.Report(b)
			for b.Loop() {
				for t := time.Now(); time.Since(t) < gap; {
				}
				laps.Start()
				rt()
				laps.Stop()
			}
		})
	}
}
