// Command sidebyside measures agentos and the two reference systems of the
// seeds (the agent-OS kernel and the TypeScript Tool Generation Protocol,
// built by ../shared/peers/setup.sh) in one window, alternating, and prints
// one Markdown table of medians: each row puts a peer's figure next to the
// agentos benchmark of the same shape, with the ratio (above 1: agentos is
// better) and the machine load before and after; a second table puts the
// goals that sit beyond what the machine allows next to their floors,
// benchmarks of the unavoidable part of the same work, run in the same
// rounds.
//
//	bash ../shared/peers/setup.sh                     # once: builds the peers into /tmp/peers
//	go run ./internal/sidebyside -rounds 3            # ~10 minutes on 2 cores
//
// Each round runs every peer benchmark once (a fresh node process) and
// every agentos benchmark once (-test.count 1), in the opposite order to
// the previous round, so that a drift of the machine's load hits both
// sides alike. The test binaries are built once, before the first round.
//
// docs/PERFORMANCE.md's side-by-side table is this program's output.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A peer is one reference system's benchmark command.
type peer struct {
	name string
	dir  string // under -peers
	args []string
}

var peers = []peer{
	{"agent-OS", "agentos", []string{"node", "bench.mjs"}},
	{"TGP", "tgp", []string{"node", "--no-node-snapshot", "bench.built.mjs"}},
}

// A suite is one agentos test binary and the benchmarks to run from it.
type suite struct {
	pkg   string // package path relative to the module root
	bench string // -test.bench
	time  string // -test.benchtime
	// agentosBin: the benchmark execs the agentos binary, built once
	// (AGENTOS_BENCH_BIN).
	agentosBin bool
}

var suites = []suite{
	// TGP's shapes, each timed over as many calls as TGP's benchmark times
	// (../shared/peers/tgp_bench.ts: WRITES 20, CHECKS 50, EXECS 200), so
	// that both medians are of the same count of calls.
	{"./tests/bench", "TGPShapes/write_file", "20x", false},
	{"./tests/bench", "TGPShapes/check_tool", "50x", false},
	{"./tests/bench", "TGPShapes/exec_tool", "200x", false},
	{"./tests/bench", "Boot100", "5x", false},
	// agent-OS's journal benchmark times 20,000 reads (../shared/peers/
	// agentos/bench.mjs, READS_FILE): ten runs of the benchmark's 2,000
	// calls (callsPerRun) are as many. (Three runs, as before 2026-12-04
	// 21:30, were 6,000 calls: 18 ms for the pinned rows, where one commit
	// or one GC moved a figure by a fifth.)
	{"./actors/executor", "JournaledReadFile/(process|inprocess)/(group-commit|write-each|replay|await-floor)", "10x", false},
	{"./actors/executor", "JournaledReadFile/(pipe|read)-floor", "20000x", false},
	{"./actors/kernel", "^BenchmarkMessages$|SpawnExit|^BenchmarkRestarts$", "1s", false},
	{"./actors/forge", "ForgeVsFloor", "200x", false},
	{"./cmd/agentos", "StartHelp|StartWorker|StartFloor", "30x", true},
}

// A row compares a peer's metric with an agentos benchmark's metric.
type row struct {
	what        string
	peer, pname string // peer system, its metric
	bench, unit string // agentos benchmark (without the -N suffix), its unit
	higher      bool   // a higher figure is better (a rate), else lower (a time)
	pscale      float64
}

// rows: the peer's figures are in its own units (ms for TGP's times,
// per second for agent-OS's rates); pscale turns them into the agentos
// unit (ns for times). TGP's times are medians of its runs: they are put
// next to our benchmarks' median iteration (median-ns/op), not the mean.
var rows = []row{
	{"journaled `tgp.read_file` calls from a tool in a loop, worker mode (calls/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/process/group-commit/record", "calls/s", true, 1},
	{"the same, in-process (calls/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/inprocess/group-commit/record", "calls/s", true, 1},
	{"durability of the same shape: each record handed to the OS (write, no fsync) before its result is used, `journal_durability: \"write_each\"`, worker (calls/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/process/write-each/record", "calls/s", true, 1},
	{"the same, in-process (calls/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/inprocess/write-each/record", "calls/s", true, 1},
	{"replay of those calls, the journal's load included, worker (calls/s)", "agent-OS", "replay_filestore_incl_load_ops_per_sec", "BenchmarkJournaledReadFile/process/replay", "calls/s", true, 1},
	{"the same, in-process (calls/s)", "agent-OS", "replay_filestore_incl_load_ops_per_sec", "BenchmarkJournaledReadFile/inprocess/replay", "calls/s", true, 1},
	{"journaled `tgp.read_file` of a file of the tool tree (/lib), in-process: read and journaled once, then answered from the run's snapshot (calls/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/inprocess/group-commit/record-tools", "calls/s", true, 1},
	{"replay of those calls, the journal's load included, in-process (calls/s)", "agent-OS", "replay_filestore_incl_load_ops_per_sec", "BenchmarkJournaledReadFile/inprocess/replay-tools", "calls/s", true, 1},
	{"the same tool-tree reads in a worker: the first read asked of the parent and journaled, the others answered by the worker from its pin (calls/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/process/group-commit/record-tools", "calls/s", true, 1},
	{"replay of those calls, the journal's load included, worker (calls/s)", "agent-OS", "replay_filestore_incl_load_ops_per_sec", "BenchmarkJournaledReadFile/process/replay-tools", "calls/s", true, 1},
	{"floor: the same tool loop awaiting a 16-character string and making no call (goja's await: the floor of any call a tool awaits), in-process (awaits/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/inprocess/await-floor", "calls/s", true, 1},
	{"the same floor in a worker (awaits/s)", "agent-OS", "record_filestore_reads_per_sec", "BenchmarkJournaledReadFile/process/await-floor", "calls/s", true, 1},
	{"floor: a raw 128-byte round trip between two Go processes over pipes (round trips/s)", "", "", "BenchmarkJournaledReadFile/pipe-floor", "calls/s", true, 1},
	{"floor: the same 16-byte file read in a bare Go loop (open, read, close; reads/s)", "", "", "BenchmarkJournaledReadFile/read-floor", "calls/s", true, 1},
	{"exec_tool fib(10) of a source never seen before through the tool API (transpile + compile + run), journaled, worker: TGP's shape, which builds a new isolate every time (ms)", "TGP", "exec_tool_fib10_median", "BenchmarkTGPShapes/exec_tool/new-source", "median-ns/op", false, 1e6},
	{"the same, CACHED (a source run before: its compiled program reused; TGP has no such shape, so no ratio) (ms)", "", "", "BenchmarkTGPShapes/exec_tool/cached", "median-ns/op", false, 1e6},
	{"check_tool of a new source through the tool API (ms)", "TGP", "check_tool_median", "BenchmarkTGPShapes/check_tool/new-source", "median-ns/op", false, 1e6},
	{"write_file of a new tool: registry, commit, push (ms)", "TGP", "write_file_median", "BenchmarkTGPShapes/write_file", "median-ns/op", false, 1e6},
	{"boot against an upstream of 100 tools in 100 commits (ms)", "TGP", "boot_clone_100_tools_median", "BenchmarkBoot100", "median-ns/op", false, 1e6},
	{"two processes bouncing messages (msgs/s)", "agent-OS", "ipc_roundtrip_msgs_per_sec", "BenchmarkMessages", "msgs/s", true, 1},
	{"spawn + exit, sequential (spawns/s)", "agent-OS", "spawn_exit_sequential_per_sec", "BenchmarkSpawnExit", "spawns/s", true, 1},
	{"supervisor restarts of a crashing child (restarts/s)", "agent-OS", "supervisor_restarts_per_sec", "BenchmarkRestarts", "restarts/s", true, 1},
	{"a forge cycle against a model that answers at once: CPU outside the model (ms)", "", "", "BenchmarkForgeVsFloor", "cycle-cpu-µs/op", false, 1e3},
	{"process start: `agentos help` until it exits (ms)", "", "", "BenchmarkStartHelp", "median-µs", false, 1e3},
	{"a sandbox worker started until it is ready for its first run: agentos-worker, which the pool starts when it sits beside agentos (`go install ./cmd/...`) (ms)", "", "", "BenchmarkStartWorker/agentos-worker", "ready-µs", false, 1e3},
	{"the same, agentos re-executed as its own worker (no agentos-worker beside it, as under `go run`) (ms)", "", "", "BenchmarkStartWorker/agentos", "ready-µs", false, 1e3},
}

// A floorRow puts an agentos figure next to its floor, measured in the same
// rounds (a benchmark of the part of the work no implementation can avoid),
// and next to issue 28's goal for it. Both figures are in µs (unit, and
// floorUnit for the floor's when it is not unit); the table prints ms.
type floorRow struct {
	what               string
	bench, floor, unit string
	goal               float64 // ms
	floorUnit          string
}

var floorRows = []floorRow{
	{"goal 5: `agentos help` until it exits, against a Go hello world that links cgo, as agentos must (`BenchmarkStartFloor/cgo`)", "BenchmarkStartHelp", "BenchmarkStartFloor/cgo", "median-µs", 15, ""},
	{"goal 5: agentos-worker until ready, against a Go program without cgo that writes the same hello frame (`BenchmarkStartFloor/pure`)", "BenchmarkStartWorker/agentos-worker", "BenchmarkStartFloor/pure", "ready-µs", 15, ""},
	{"goal 6: a forge cycle's CPU outside the model, against the same work without agentos's plumbing (`BenchmarkForgeVsFloor`: the two alternate in chunks of ten in one process; the floor's journal commits the model's answer before use, then the rest, as the forge's guarantee demands)", "BenchmarkForgeVsFloor", "BenchmarkForgeVsFloor", "cycle-cpu-µs/op", 2, "floor-cpu-µs/op"},
	{"the same against a floor whose journal is one transaction (below that guarantee)", "BenchmarkForgeVsFloor", "BenchmarkForgeVsFloor", "cycle-cpu-µs/op", 2, "floor-one-tx-cpu-µs/op"},
}

func main() {
	peersDir := flag.String("peers", filepath.Join(os.TempDir(), "peers"), "where ../shared/peers/setup.sh built the peers")
	rounds := flag.Int("rounds", 3, "alternating rounds; the table shows medians")
	flag.Parse()
	if err := run(*peersDir, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

// samples holds every figure seen, by system ("agentos" or a peer's name)
// and metric.
type samples map[string]map[string][]float64

func (s samples) add(sys, metric string, v float64) {
	if s[sys] == nil {
		s[sys] = map[string][]float64{}
	}
	s[sys][metric] = append(s[sys][metric], v)
}

func run(peersDir string, rounds int) error {
	if err := checkPeers(peersDir); err != nil {
		return err
	}
	bin, err := os.MkdirTemp("", "sidebyside")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	agentos, err := build(bin)
	if err != nil {
		return err
	}
	loadBefore := loadavg()
	all := samples{}
	if err := measure(jobs(all, peersDir, bin, agentos), rounds); err != nil {
		return err
	}
	fmt.Printf("Measured %s, %d alternating rounds, medians; load average %s before, %s after.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), rounds, loadBefore, loadavg())
	fmt.Println("| path | peer | peer's figure | agentos benchmark | agentos | ratio (> 1: agentos better) |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(tableRow(all, r))
	}
	fmt.Println()
	fmt.Println("| goal against its floor, same rounds | agentos (ms) | floor (ms) | agentos ÷ floor | goal (ms) |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range floorRows {
		fmt.Println(floorLine(all, r))
	}
	return nil
}

// floorLine is r's line of the floors' table, "—" where a figure is missing.
func floorLine(all samples, r floorRow) string {
	av, aok := median(all["agentos"][r.bench+" "+r.unit])
	funit := r.unit
	if r.floorUnit != "" {
		funit = r.floorUnit
	}
	fv, fok := median(all["agentos"][r.floor+" "+funit])
	as, fs, ratio := "—", "—", "—"
	if aok {
		as = strconv.FormatFloat(av/1e3, 'f', 3, 64)
	}
	if fok {
		fs = strconv.FormatFloat(fv/1e3, 'f', 3, 64)
	}
	if aok && fok && fv > 0 {
		ratio = fmt.Sprintf("%.2f×", av/fv)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |", r.what, as, fs, ratio, strconv.FormatFloat(r.goal, 'f', -1, 64))
}

// checkPeers checks that every peer is built under peersDir.
func checkPeers(peersDir string) error {
	for _, p := range peers {
		if _, err := os.Stat(filepath.Join(peersDir, p.dir, p.args[len(p.args)-1])); err != nil {
			return fmt.Errorf("%s is not built under %s (%v): run bash ../shared/peers/setup.sh first, or pass -peers", p.name, peersDir, err)
		}
	}
	return nil
}

// testBinary is where build puts the test binary of package pkg.
func testBinary(bin, pkg string) string {
	return filepath.Join(bin, strings.NewReplacer("/", "_", ".", "root").Replace(pkg)+".test")
}

// build builds into bin the test binary of each suite's package and the
// agentos binary, whose path it returns.
func build(bin string) (string, error) {
	for _, s := range suites {
		out := testBinary(bin, s.pkg)
		if _, err := os.Stat(out); err == nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "building %s\n", s.pkg)
		if b, err := exec.Command("go", "test", "-c", "-o", out, s.pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("building the benchmarks of %s: %v\n%s", s.pkg, err, b)
		}
	}
	agentos := filepath.Join(bin, "agentos")
	fmt.Fprintln(os.Stderr, "building ./cmd/agentos and ./cmd/agentos-worker")
	if b, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/agentos", "./cmd/agentos-worker").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building agentos: %v\n%s", err, b)
	}
	return agentos, nil
}

// job is one benchmark process to run each round.
type job struct {
	name string
	do   func() error
}

// jobs are the peers' benchmarks and the suites', each adding its figures
// to all.
func jobs(all samples, peersDir, bin, agentos string) []job {
	var js []job
	for _, p := range peers {
		js = append(js, job{p.name, func() error { return runPeer(all, peersDir, p) }})
	}
	for _, s := range suites {
		var env []string
		if s.agentosBin {
			env = []string{"AGENTOS_BENCH_BIN=" + agentos}
		}
		js = append(js, job{s.pkg + " " + s.bench, func() error { return runSuite(all, testBinary(bin, s.pkg), s, env) }})
	}
	return js
}

// measure runs the jobs rounds times, in the reverse order each other
// round, so that neither side always runs first.
func measure(js []job, rounds int) error {
	for r := range rounds {
		if r > 0 {
			slices.Reverse(js)
		}
		for _, j := range js {
			fmt.Fprintf(os.Stderr, "round %d/%d: %s (load %s)\n", r+1, rounds, j.name, loadavg())
			if err := j.do(); err != nil {
				return fmt.Errorf("%s: %w", j.name, err)
			}
		}
	}
	return nil
}

// tableRow is r's line of the table: the peer's median, agentos's, and
// their ratio (> 1: agentos better), "—" where a figure is missing.
func tableRow(all samples, r row) string {
	pv, pok := median(all[r.peer][r.pname])
	av, aok := median(all["agentos"][r.bench+" "+r.unit])
	ps, as, ratio := "—", "—", "—"
	if pok {
		ps = format(pv, r.higher, 1) + " `" + r.pname + "`"
	}
	if aok {
		as = format(av, r.higher, r.pscale)
	}
	if pok && aok && pv > 0 && av > 0 {
		if r.higher {
			ratio = fmt.Sprintf("%.2f×", av/pv)
		} else {
			ratio = fmt.Sprintf("%.2f×", pv*r.pscale/av)
		}
	}
	who := r.peer
	if who == "" {
		who = "—"
	}
	return fmt.Sprintf("| %s | %s | %s | `%s` | %s | %s |", r.what, who, ps, r.bench, as, ratio)
}

// format prints a rate as is and a time in ms (v in ns when scale is 1e6).
func format(v float64, rate bool, scale float64) string {
	if rate {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v/scale, 'f', 3, 64)
}

func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// runPeer runs one peer benchmark process and keeps its `name value unit`
// lines.
func runPeer(all samples, peersDir string, p peer) error {
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Dir = filepath.Join(peersDir, p.dir)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%v: %w", p.args, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			all.add(p.name, f[0], v)
		}
	}
	return nil
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// runSuite runs one agentos test binary's benchmarks once and keeps every
// "value unit" pair of every benchmark line.
func runSuite(all samples, bin string, s suite, env []string) error {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", s.bench, "-test.benchtime", s.time, "-test.count", "1")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // logs, kept apart: they would split a result line
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%v\n%s%s", err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				all.add("agentos", m[1]+" "+f[i+1], v)
			}
		}
	}
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
