package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// BenchmarkAgentToolJournal measures what journaling an agent's tool calls
// (restart means resume) costs: one agent run of 5 list_files calls and 6
// model answers (scripted, over HTTP on loopback), its model calls
// journaled durably in both cases, its tool calls too with journaled=true
// (each committed before its result goes to the model), as agent.Main
// does; journaled=false is the loop before, whose tool calls the journal
// did not see.
func BenchmarkAgentToolJournal(b *testing.B) {
	srv := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		tools := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool {
				tools++
			}
		}
		if tools < 5 {
			return llmtest.Step{ToolCalls: []llm.ToolCall{{Name: "list_files", Arguments: fmt.Sprintf(`{"dir":"tools","n":%d}`, tools)}}}
		}
		return llmtest.Step{Content: "done"}
	})
	defer srv.Close()
	for _, journaled := range []bool{false, true} {
		b.Run(fmt.Sprintf("journaled=%v", journaled), func(b *testing.B) {
			rt, err := host.Start(context.Background(), host.Config{Root: b.TempDir(), Isolation: "inprocess", Logger: scenario.Quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "scripted"})
			if err != nil {
				b.Fatal(err)
			}
			tools, err := rt.Tools()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				run, err := rt.Journal().Begin(journal.RunMeta{Kind: agent.Kind, Args: json.RawMessage(`{"task":"bench"}`)})
				if err != nil {
					b.Fatal(err)
				}
				run.Durable()
				opts := agent.Options{LLM: driver.Chain(driver.Mux{llm.Driver: client.Device()}, run.Middleware()), Tools: tools, RepeatLimit: 100}
				if journaled {
					opts.Journal = run.Middleware()
				}
				res, err := agent.Run(context.Background(), opts, "bench")
				if err != nil || res.Reason != agent.ReasonAnswer {
					b.Fatalf("%+v %v", res, err)
				}
				_ = run.End(journal.StatusOK, nil, nil)
			}
		})
	}
}
