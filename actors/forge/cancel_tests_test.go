package forge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

const slowTests = `const fib = require('./fib').default;
export default async function (): Promise<void> {
  let s = 0;
  for (let i = 0; i < 30000000; i++) { s += i % 7; }
  if (fib({ n: 10 }) !== 55 || s < 0) { throw new Error("bad"); }
}
`

// REVIEW: cancelled WHILE the tests run: runTests returns (outcome{Passed:false}, nil),
// so the journal records the interruption as a real test failure; the resumed
// forge replays it and the passing candidate is judged failed.
func TestCancelDuringTestsIsNoTestOutcome(t *testing.T) {
	root := t.TempDir()
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": fibCode, "tests": slowTests})
	step := llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "submit_tool", Arguments: string(args)}}}
	srv := llmtest.NewServer([]llmtest.Step{step})
	defer srv.Close()
	e := newEnv(t, srv, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := e.f.Forge(ctx, "fib", func(llm.Usage) error { time.AfterFunc(100*time.Millisecond, cancel); return nil })
	runs, _ := e.j.Unfinished()
	if len(runs) != 1 {
		t.Fatalf("not resumable: %v", err)
	}
	ents, _ := e.j.Entries(runs[0].ID)
	for _, en := range ents {
		if en.Driver == "forge" && en.Op == "run" {
			t.Fatalf("the interrupted test run was journaled as an outcome: %s", en.Response)
		}
	}
}
