package forge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dop251/goja"
	bolt "go.etcd.io/bbolt"

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
//     loopback HTTP, its answer decoded (the forge's one model call);
//
//   - check: check_tool on the tool (tree-sitter and one esbuild
//     transform: the judgment the forge's replay reproduces);
//
//   - tests: the tests transformed by esbuild and run once in a fresh goja
//     runtime, requiring the tool (transformed by check, so from the cache);
//
//   - journal: one bbolt transaction, fsynced, holding the run's start,
//     the model's answer, the path check, the test run and the end;
//
//   - files: the tool and its tests written into the tool root;
//
//   - all: the five in a row, the floor.
//
//     go test -run '^$' -bench 'ForgeCycle|ForgeFloor' -benchtime 200x ./actors/forge/
func BenchmarkForgeFloor(b *testing.B) {
	parts := []struct {
		name  string
		setup func(b *testing.B, base int) func(i int)
	}{
		{"model", floorModel}, {"check", floorCheck}, {"tests", floorTests},
		{"journal", floorJournal}, {"files", floorFiles},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) { runFloor(b, p.setup(b, nextBase())) })
	}
	b.Run("all", func(b *testing.B) {
		var fs []func(int)
		base := nextBase() // one for all: tests find the tool check transformed
		for _, p := range parts {
			fs = append(fs, p.setup(b, base))
		}
		runFloor(b, func(i int) {
			for _, f := range fs {
				f(i)
			}
		})
	})
}

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

func floorModel(b *testing.B, base int) func(int) {
	script := make([]llmtest.Step, b.N)
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
		res, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: fmt.Sprintf("fibonacci variant %d", base+i)}}})
		if err != nil || len(res.Message.ToolCalls) != 1 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

func floorCheck(b *testing.B, base int) func(int) {
	c := check.New(check.Options{})
	return func(i int) {
		path, code, _, _ := benchCandidate(base + i)
		if r := c.Check(path, []byte(code)); len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
	}
}

func floorTests(b *testing.B, base int) func(int) {
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

func floorJournal(b *testing.B, base int) func(int) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return func(i int) {
		path, code, tests, args := benchCandidate(base + i)
		run := []byte(fmt.Sprintf("%020d", base+i))
		records := [][]byte{
			[]byte(`{"kind":"forge","args":{"spec":"fibonacci variant"},"status":"running"}`),
			[]byte(`{"driver":"llm","op":"complete","response":` + string(mustJSON(args)) + `}`),
			[]byte(`{"driver":"forge","op":"taken","request":{"path":"` + path + `"},"response":{"taken":false}}`),
			[]byte(`{"driver":"forge","op":"run","request":` + string(mustJSON(code+tests)) + `,"response":{"passed":true}}`),
			[]byte(`{"kind":"forge","status":"ok","result":{"path":"` + path + `"}}`),
		}
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("runs"))
			if err != nil {
				return err
			}
			for n, r := range records {
				if err := bk.Put(append(run, byte(n)), r); err != nil {
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

func mustJSON(s string) []byte { b, _ := json.Marshal(s); return b }

func floorFiles(b *testing.B, base int) func(int) {
	dir := filepath.Join(b.TempDir(), "tools", "bench")
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
