package forge_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/benchutil"
)

// BenchmarkForgeCycle is one whole forge against the scripted model: the
// request over loopback HTTP, check_tool, the tests in the sandbox, the
// journal, the registry. The model answers at once, so the time is the
// runtime's. cpu-µs/op is the process's CPU time per forge (the scripted
// model's server included: it runs in the process), user-µs/op and
// sys-µs/op its parts (see benchutil.ReportCPUSplit).
//
//	go test -run '^$' -bench ForgeCycle -count 6 ./actors/forge/
func BenchmarkForgeCycle(b *testing.B) {
	script := make([]llmtest.Step, b.N)
	for i := range script {
		_, _, _, args := benchCandidate(i)
		script[i] = llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "c", Name: "submit_tool", Arguments: args}}}
	}
	srv := llmtest.NewServer(script)
	defer srv.Close()
	e := newEnv(b, srv, b.TempDir(), 2) // a threshold above 1: never reuse
	b.ResetTimer()
	user, sys := benchutil.CPUTimes()
	defer func() { benchutil.ReportCPUSplit(b, user, sys) }()
	for i := 0; i < b.N; i++ {
		res, err := e.f.Forge(context.Background(), fmt.Sprintf("fibonacci variant %d", i), nil)
		if err != nil || !res.Attempts[0].Passed {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
