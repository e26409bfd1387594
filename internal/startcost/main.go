// Command startcost measures process start from outside, as a user's shell
// or the executor's pool meets it: whole processes, started and waited for
// by this program, repeated, medians. It builds agentos and a hello-world
// Go program (the floor: the Go runtime's start and the kernel's exec of a
// static binary, nothing of agentos) and alternates them in one window:
//
//   - floor: the hello-world binary until it exits;
//   - help: `agentos help` until it exits;
//   - worker: a sandbox worker started as the executor's pool starts one
//     (AGENTOS_SANDBOX_WORKER=1, best_effort confinement) until its hello
//     frame arrives, when it accepts a run: agentos re-executed (what the
//     pool starts without agentos-worker next to it), and agentos-worker
//     (cmd/agentos-worker, what it starts with one built with it).
//
// For each it prints the median wall time and the median CPU time (user +
// system, from the child's rusage: steadier than wall time on a loaded
// machine), and for help and each worker the median of the package
// initialisation the runtime reports (GODEBUG=inittrace=1, summed), with
// the machine's load before and after.
//
//	go run ./internal/startcost -n 40
//
// docs/PERFORMANCE.md's process start rows are this program's output.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 30, "runs of each measure (alternating)")
	bin := flag.String("bin", "", "an agentos binary to measure instead of building ./cmd/agentos")
	wbin := flag.String("worker-bin", "", "an agentos-worker binary to measure instead of building ./cmd/agentos-worker")
	before := flag.String("before", "", "another agentos binary (an earlier build) whose help and re-executed worker are measured in the same rounds")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "startcost: -n must be at least 1")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "startcost")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	agentos := built(dir, *bin, "agentos", "./cmd/agentos")
	worker := built(dir, *wbin, "agentos-worker", "./cmd/agentos-worker")
	floor := buildFloor(dir)
	ms := []*measure{
		{name: "floor: a hello-world Go binary until it exits", run: func() (time.Duration, time.Duration) { return runOnce(exec.Command(floor)) }},
		{name: "`agentos help` until it exits", run: func() (time.Duration, time.Duration) { return runOnce(exec.Command(agentos, "help")) }, initOf: exec.Command(agentos, "help")},
		{name: "a sandbox worker until its hello: agentos re-executed (before)", run: func() (time.Duration, time.Duration) { return startWorker(agentos) }, initOf: workerCmd(agentos)},
		{name: "a sandbox worker until its hello: agentos-worker (after)", run: func() (time.Duration, time.Duration) { return startWorker(worker) }, initOf: workerCmd(worker)},
	}
	if *before != "" {
		ms = append(ms, beforeRows(*before)...)
	}
	fmt.Printf("load before: %s\n", loadavg())
	for range *n {
		for _, m := range ms {
			m.once()
		}
	}
	fmt.Printf("load after:  %s\n", loadavg())
	fmt.Printf("runs: %d each, alternating; medians\n\n", *n)
	fmt.Println("| process | wall (ms) | CPU user+sys (ms) | package inits (ms, inittrace) |")
	fmt.Println("|---|---|---|---|")
	for _, m := range ms {
		fmt.Println(m.row())
	}
}

// beforeRows measure help and the re-executed worker of an earlier build.
func beforeRows(bin string) []*measure {
	return []*measure{
		{name: "`agentos help` until it exits, -before build", run: func() (time.Duration, time.Duration) { return runOnce(exec.Command(bin, "help")) }, initOf: exec.Command(bin, "help")},
		{name: "a sandbox worker until its hello: -before build re-executed", run: func() (time.Duration, time.Duration) { return startWorker(bin) }, initOf: workerCmd(bin)},
	}
}

// measure is one kind of process: run starts one and returns its wall and
// CPU time; initOf, when set, is the command whose package initialisation
// is summed (started again each round with GODEBUG=inittrace=1).
type measure struct {
	name            string
	run             func() (wall, cpu time.Duration)
	initOf          *exec.Cmd
	wall, cpu, init []time.Duration
}

// once takes one round of m.
func (m *measure) once() {
	w, c := m.run()
	m.wall, m.cpu = append(m.wall, w), append(m.cpu, c)
	if m.initOf != nil {
		m.init = append(m.init, initTime(m.initOf))
	}
}

// row is m's line of the table.
func (m *measure) row() string {
	inits := "–"
	if len(m.init) > 0 {
		inits = fmt.Sprintf("%.1f", msOf(median(m.init)))
	}
	return fmt.Sprintf("| %s | %.1f | %.1f | %s |", m.name, msOf(median(m.wall)), msOf(median(m.cpu)), inits)
}

// built returns bin, or else pkg built as name in dir.
func built(dir, bin, name, pkg string) string {
	if bin != "" {
		return bin
	}
	out := filepath.Join(dir, name)
	build(dir, out, pkg)
	return out
}

// runOnce runs cmd to its end and returns its wall and CPU time.
func runOnce(cmd *exec.Cmd) (wall, cpu time.Duration) {
	cmd.Stdout = io.Discard
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err))
	}
	return time.Since(t0), cpuOf(cmd.ProcessState)
}

// workerCmd is bin started as the pool starts a sandbox worker.
func workerCmd(bin string) *exec.Cmd {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AGENTOS_SANDBOX_WORKER=1", "AGENTOS_WORKER_MEMORY=268435456", "AGENTOS_WORKER_CONFINE=best_effort")
	return cmd
}

// startWorker starts a sandbox worker, waits for its hello frame (wall
// time), then closes its stdin and waits for its exit (CPU time: the whole
// process, its start and its exit).
func startWorker(bin string) (wall, cpu time.Duration) {
	cmd := workerCmd(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	r := bufio.NewReader(stdout)
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		fail(fmt.Errorf("no hello from the worker: %w (stderr: %s)", err, stderr.String()))
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		fail(err)
	}
	wall = time.Since(t0)
	if !bytes.Contains(body, []byte(`"t":"hello"`)) {
		fail(fmt.Errorf("the worker's first frame is not a hello: %s", body))
	}
	stdin.Close()
	_, _ = io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		fail(fmt.Errorf("worker exit: %w (stderr: %s)", err, stderr.String()))
	}
	return wall, cpuOf(cmd.ProcessState)
}

// initTime is the sum of the init times GODEBUG=inittrace=1 reports for
// one run of a copy of like (a worker's stdin is empty: it greets and exits).
func initTime(like *exec.Cmd) time.Duration {
	cmd := exec.Command(like.Path, like.Args[1:]...)
	cmd.Env = append(slices.Clone(like.Env), "GODEBUG=inittrace=1")
	if like.Env == nil {
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		fail(err)
	}
	var sum time.Duration
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init <pkg> @<t> ms, <d> ms clock, <b> bytes, <a> allocs
		f := strings.Fields(line)
		if len(f) >= 7 && f[0] == "init" && f[6] == "clock," {
			if v, err := strconv.ParseFloat(f[4], 64); err == nil {
				sum += time.Duration(v * float64(time.Millisecond))
			}
		}
	}
	return sum
}

func cpuOf(ps *os.ProcessState) time.Duration {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return ps.UserTime() + ps.SystemTime()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func build(dir, out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if dir != "" && !strings.HasPrefix(pkg, "./cmd") {
		cmd.Dir = dir
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Errorf("go build %s: %w\n%s", pkg, err, b))
	}
}

// buildFloor builds the hello-world program in a module of its own.
func buildFloor(dir string) string {
	src := filepath.Join(dir, "floor")
	if err := os.MkdirAll(src, 0o755); err != nil {
		fail(err)
	}
	files := map[string]string{
		"go.mod":  "module floor\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			fail(err)
		}
	}
	out := filepath.Join(dir, "floor-bin")
	build(src, out, ".")
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startcost:", err)
	os.Exit(1)
}
