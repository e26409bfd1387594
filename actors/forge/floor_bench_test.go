package forge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dop251/goja"
	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/transpile"
)

// benchCandidate is BenchmarkForgeCycle's i-th candidate: a source no
// cache has seen, its tests, the model's submit_tool arguments.
func benchCandidate(i int) (path, code, tests, args string) {
	path = fmt.Sprintf("tools/bench/fib%d.ts", i)
	code = strings.Replace(fibCode, "n-th Fibonacci number", fmt.Sprintf("n-th Fibonacci number, variant %d", i), 1)
	tests = strings.Replace(fibTests, "require('./fib')", fmt.Sprintf("require('./fib%d')", i), 1)
	b, _ := json.Marshal(map[string]string{"path": path, "code": code, "tests": tests})
	return path, code, tests, string(b)
}

// BenchmarkForgeFloor is the work no forge of BenchmarkForgeCycle's
// candidates can avoid, each part alone, without agentos's plumbing (no
// actors, no jail, no journal format): the floor a forge cycle is compared
// with, in the same run (docs/PERFORMANCE.md, goal 6).
//
//   - model: one chat completion from the same scripted server over
//     loopback HTTP, the forge's request (its system prompt, the spec and
//     the submit_tool schema), its answer decoded (the forge's one model
//     call);
//
//   - check: check_tool on the tool (tree-sitter and one esbuild
//     transform: the judgment the forge's replay reproduces);
//
//   - tests: the tests transformed by esbuild and run once in a fresh goja
//     runtime, requiring the tool (transformed by check, so from the cache);
//
//   - journal: two bbolt transactions, fsynced: the run's start with the
//     model's request and answer (a forge MUST have the answer on disk
//     before it uses it, so that a crash never pays for it twice), then
//     the path check, the test run and the end;
//
//   - journal-one-tx: the same records in one transaction, below what
//     that guarantee allows (reported beside, not part of "all");
//
//   - files: the tool and its tests written into the tool root;
//
//   - all: the five in a row, the floor.
//
//     go test -run '^$' -bench 'ForgeCycle|ForgeFloor' -benchtime 200x ./actors/forge/
func BenchmarkForgeFloor(b *testing.B) {
	for _, p := range append(floorParts, floorOneTx) {
		b.Run(p.name, func(b *testing.B) { runFloor(b, p.setup(b, nextBase(), b.N)) })
	}
	b.Run("all", func(b *testing.B) { runFloor(b, floorAll(b, b.N, "", false)) })
}

// floorPart is one part of the floor: it sets up for n candidates from
// base and returns the part's work for the i-th.
type floorPart struct {
	name  string
	setup func(b *testing.B, base, n int) func(i int)
}

// floorParts are the floor's parts ("all" runs them in a row); floorOneTx
// replaces "journal" in the one-transaction floor.
var floorParts = []floorPart{
	{"model", floorModel}, {"check", floorCheck}, {"tests", floorTests},
	{"journal", floorJournal}, {"files", floorFiles},
}

var floorOneTx = floorPart{"journal-one-tx", floorJournalOneTx}

// floorBase numbers the floor's candidates: every run of a part (the
// benchmark's probe, its measured run, the parts, "all") judges sources no
// cache has seen, as BenchmarkForgeCycle's are.
var floorBase atomic.Int64

func nextBase() int { return int(floorBase.Add(1 << 20)) }

// runFloor runs f b.N times, reporting the process's CPU per op.
func runFloor(b *testing.B, f func(i int)) {
	b.ResetTimer()
	user, sys := benchutil.CPUTimes()
	defer func() { benchutil.ReportCPUSplit(b, user, sys) }()
	for i := 0; i < b.N; i++ {
		f(i)
	}
}

func floorModel(b *testing.B, base, n int) func(int) {
	script := make([]llmtest.Step, n)
	for i := range script {
		_, _, _, args := benchCandidate(base + i)
		script[i] = llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool", Arguments: args}}}
	}
	srv := llmtest.NewServer(script)
	b.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "scripted"})
	if err != nil {
		b.Fatal(err)
	}
	return func(i int) {
		res, err := c.Complete(context.Background(), forge.FirstRequest(fmt.Sprintf("fibonacci variant %d", base+i)))
		if err != nil || len(res.Message.ToolCalls) != 1 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

func floorCheck(b *testing.B, base, _ int) func(int) {
	c := check.New(check.Options{})
	return func(i int) {
		path, code, _, _ := benchCandidate(base + i)
		if r := c.Check(path, []byte(code)); len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
	}
}

func floorTests(b *testing.B, base, _ int) func(int) {
	helpers := goja.MustCompile("helpers", transpile.HelpersJS, true)
	tr := transpile.Default() // check's: the tool is in its cache
	return func(i int) {
		path, code, tests, _ := benchCandidate(base + i)
		tool, err := tr.Transpile(path, []byte(code))
		if err != nil {
			b.Fatal(err)
		}
		tt, err := tr.Transpile(strings.Replace(path, ".ts", ".test.ts", 1), []byte(tests))
		if err != nil {
			b.Fatal(err)
		}
		if err := runGojaTests(helpers, tool.JS, tt.JS); err != nil {
			b.Fatal(err)
		}
	}
}

// runGojaTests runs the tests' default export in a fresh runtime, their
// require of the tool answered with the tool's module.
func runGojaTests(helpers *goja.Program, toolJS, testsJS string) error {
	vm := goja.New()
	hs, err := vm.RunProgram(helpers) // as the sandbox prepares a runtime
	if err != nil {
		return err
	}
	load := func(name, js string, require goja.Value) (*goja.Object, error) {
		p, err := goja.Compile(name, js, true)
		if err != nil {
			return nil, err
		}
		fn, err := vm.RunProgram(p)
		if err != nil {
			return nil, err
		}
		call, _ := goja.AssertFunction(fn)
		module := vm.NewObject()
		exports := vm.NewObject()
		_ = module.Set("exports", exports)
		if _, err := call(goja.Undefined(), exports, require, module, vm.ToValue(name), vm.ToValue("tools/bench"), hs); err != nil {
			return nil, err
		}
		return module.Get("exports").ToObject(vm), nil
	}
	tool, err := load("tool.js", toolJS, goja.Undefined())
	if err != nil {
		return err
	}
	tests, err := load("tests.js", testsJS, vm.ToValue(func(string) *goja.Object { return tool }))
	if err != nil {
		return err
	}
	run, ok := goja.AssertFunction(tests.Get("default"))
	if !ok {
		return fmt.Errorf("the tests have no default export")
	}
	v, err := run(goja.Undefined())
	if err != nil {
		return err
	}
	if p, ok := v.Export().(*goja.Promise); !ok || p.State() != goja.PromiseStateFulfilled {
		return fmt.Errorf("the tests did not pass: %v", v)
	}
	return nil
}

func floorJournal(b *testing.B, base, _ int) func(int) { return floorJournalTx(b, base, 2) }

func floorJournalOneTx(b *testing.B, base, _ int) func(int) { return floorJournalTx(b, base, 1) }

// floorJournalTx writes a forge's five records in txs fsynced
// transactions (1 or 2: the start and the model's answer, then the rest).
func floorJournalTx(b *testing.B, base, txs int) func(int) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return func(i int) {
		path, code, tests, args := benchCandidate(base + i)
		run := []byte(fmt.Sprintf("%020d", base+i))
		request, _ := json.Marshal(forge.FirstRequest(fmt.Sprintf("fibonacci variant %d", base+i)))
		answer, _ := json.Marshal(llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool", Arguments: args}}}, FinishReason: "tool_calls"})
		records := [][]byte{
			[]byte(`{"kind":"forge","args":{"spec":"fibonacci variant"},"status":"running"}`),
			[]byte(`{"driver":"llm","op":"complete","request":` + string(request) + `,"response":` + string(answer) + `}`),
			[]byte(`{"driver":"forge","op":"taken","request":{"path":"` + path + `"},"response":{"taken":false}}`),
			[]byte(`{"driver":"forge","op":"run","request":` + string(mustJSON(code+tests)) + `,"response":{"passed":true}}`),
			[]byte(`{"kind":"forge","status":"ok","result":{"path":"` + path + `"}}`),
		}
		groups := [][2]int{{0, len(records)}}
		if txs == 2 {
			groups = [][2]int{{0, 2}, {2, len(records)}}
		}
		for _, g := range groups {
			err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("runs"))
				if err != nil {
					return err
				}
				for n := g[0]; n < g[1]; n++ {
					if err := bk.Put(append(run, byte(n)), records[n]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func mustJSON(s string) []byte { b, _ := json.Marshal(s); return b }

func floorFiles(b *testing.B, base, _ int) func(int) {
	return floorFilesIn(b, base, filepath.Join(b.TempDir(), "tools", "bench"))
}

// floorFilesIn is floorFiles writing into dir.
func floorFilesIn(b *testing.B, base int, dir string) func(int) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return func(i int) {
		_, code, tests, _ := benchCandidate(base + i)
		for name, data := range map[string]string{fmt.Sprintf("fib%d.ts", base+i): code, fmt.Sprintf("fib%d.test.ts", base+i): tests} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// pairChunk is how many forges, then floors, BenchmarkForgeVsFloor runs in
// a row: short enough (about 0.1 s) that the machine's speed, which drifts
// by tens of percent over seconds on a shared VM, is the same for both.
const pairChunk = 10

// BenchmarkForgeVsFloor is BenchmarkForgeCycle and BenchmarkForgeFloor/all
// in one process, warmed up, in alternating chunks of pairChunk: the
// comparison of goal 6 in one window. It reports each side's CPU per op
// (cycle-cpu-µs/op, floor-cpu-µs/op) and "ratio", the median of the
// chunks' ratios; and the same against the floor whose journal is one
// transaction (floor-one-tx-cpu-µs/op, ratio-one-tx), a third chunk.
//
//	go test -run '^$' -bench ForgeVsFloor -benchtime 200x ./actors/forge/
func BenchmarkForgeVsFloor(b *testing.B) {
	const warm = pairChunk
	n := b.N + warm
	script := make([]llmtest.Step, n)
	for i := range script {
		_, _, _, args := benchCandidate(i)
		script[i] = llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool", Arguments: args}}}
	}
	srv := llmtest.NewServer(script)
	defer srv.Close()
	root := b.TempDir()
	e := newEnv(b, srv, root, 2) // a threshold above 1: never reuse
	forge := func(i int) {
		res, err := e.f.Forge(context.Background(), fmt.Sprintf("fibonacci variant %d", i), nil)
		if err != nil || !res.Attempts[0].Passed {
			b.Fatalf("%v %+v", err, res)
		}
	}
	// The floor's files go beside the forged tools: creating a file costs
	// what the directory's filesystem group makes it cost (on ext4, an
	// inode allocation skips the inodes deleted in the last minutes, which
	// earlier runs' temporary directories leave by the thousand).
	dir := filepath.Join(root, "tools", "bench")
	floor, floorOne := floorAll(b, n, dir, false), floorAll(b, n, dir, true)
	var cycleCPU, floorCPU, oneCPU time.Duration
	var ratios, oneRatios []float64
	for i := 0; i < n; i += pairChunk {
		if i == warm {
			b.ResetTimer()
		}
		k := min(pairChunk, n-i)
		c, f, o := chunkCPU(forge, i, k), chunkCPU(floor, i, k), chunkCPU(floorOne, i, k)
		if i >= warm {
			cycleCPU, floorCPU, oneCPU = cycleCPU+c, floorCPU+f, oneCPU+o
			ratios, oneRatios = append(ratios, float64(c)/float64(f)), append(oneRatios, float64(c)/float64(o))
		}
	}
	us := float64(b.N) * float64(time.Microsecond)
	b.ReportMetric(float64(cycleCPU)/us, "cycle-cpu-µs/op")
	b.ReportMetric(float64(floorCPU)/us, "floor-cpu-µs/op")
	b.ReportMetric(float64(oneCPU)/us, "floor-one-tx-cpu-µs/op")
	b.ReportMetric(medianOf(ratios), "ratio")
	b.ReportMetric(medianOf(oneRatios), "ratio-one-tx")
}

// medianOf returns the median of v, which it sorts.
func medianOf(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// floorAll is BenchmarkForgeFloor/all's op for n candidates: the parts in
// a row, on one base (the tests find the tool check transformed), the
// files written into filesDir ("": a directory of their own), the journal
// in one transaction with oneTx.
func floorAll(b *testing.B, n int, filesDir string, oneTx bool) func(int) {
	var fs []func(int)
	base := nextBase()
	for _, p := range floorParts {
		switch {
		case p.name == "files" && filesDir != "":
			fs = append(fs, floorFilesIn(b, base, filesDir))
			continue
		case p.name == "journal" && oneTx:
			p = floorOneTx
		}
		fs = append(fs, p.setup(b, base, n))
	}
	return func(i int) {
		for _, f := range fs {
			f(i)
		}
	}
}

// chunkCPU runs f(i) to f(i+k-1) and returns the process's CPU time they took.
func chunkCPU(f func(int), i, k int) time.Duration {
	start := benchutil.CPUTime()
	for j := i; j < i+k; j++ {
		f(j)
	}
	return benchutil.CPUTime() - start
}
