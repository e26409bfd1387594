package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentos-run/agentos/transpile"
)

// TestPrewarmAfterRunsPreparesBetweenRuns: with PrewarmAfterRuns a run
// starts no preparation of the next runtime (it would compete with the run
// for the CPU); the caller's Prewarm does, and the next run takes what it
// prepared. A run with none ready prepares its own, and every run gets a
// runtime no other run used.
func TestPrewarmAfterRunsPreparesBetweenRuns(t *testing.T) {
	out, err := transpile.Default().Transpile("tools/g.ts", []byte("export default () => { const seen = (globalThis as any).seen; (globalThis as any).seen = true; return !!seen; };\n"))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Entry: Module{Path: "tools/g.ts", Hash: out.Hash, JS: out.JS}, Args: json.RawMessage(`{}`)}
	e := NewEngine(0, false)
	e.PrewarmAfterRuns()
	state := func() (spare, filling bool) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.spare != nil, e.filling
	}
	run := func(i int) {
		if o := e.Run(context.Background(), job, nopBridge{}); o.Err != nil || string(o.Result) != "false" {
			t.Fatalf("run %d: %s %+v (true: it saw an earlier run's global)", i, o.Result, o.Err)
		}
		if spare, filling := state(); spare || filling {
			t.Fatalf("after run %d a runtime is ready or being prepared (spare %v, filling %v): the run started it", i, spare, filling)
		}
	}
	run(0) // none ready: it prepares its own
	for i := 1; i < 4; i++ {
		e.Prewarm()
		e.mu.Lock()
		for e.spare == nil && e.filling {
			e.cond.Wait()
		}
		e.mu.Unlock()
		if spare, _ := state(); !spare {
			t.Fatal("Prewarm prepared no runtime")
		}
		run(i)
	}
}
