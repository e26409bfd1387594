package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// conversationTurns is the length of BenchmarkConversationJournal's agent
// conversation: model requests, each repeating every earlier turn.
const conversationTurns = 100

// BenchmarkConversationJournal measures what a 100-turn agent conversation
// costs the journal (issue 29, item 3): one agent.Run against the scripted
// model over HTTP on loopback (99 tool calls, then an answer), its model
// and tool calls journaled durably as agent runs are, with the kernel
// tools' specs in every request and a tool result of about 1.5 KiB per
// turn. "whole" stores every payload whole (journal.Options.NoChunks: the
// journal before chunks), "chunked" as chunks (the default). Each reports
// the journal's size after the live run (journal-B: the file; used-B: its
// pages in use), and ns/op is one replay of the run: the recording loaded
// (load-ns/op) and the whole loop run again with every answer from the
// journal; cpu-µs/op is its CPU time (all threads: steadier than wall time
// on a shared machine).
//
//	go test -run XXX -bench ConversationJournal -benchtime 20x ./tests/bench/
func BenchmarkConversationJournal(b *testing.B) {
	srv := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		turn := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool {
				turn++
			}
		}
		if turn < conversationTurns-1 {
			return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", turn), Name: "read_orders", Arguments: fmt.Sprintf(`{"day":%d}`, turn)}}}
		}
		return llmtest.Step{Content: "The orders total 12345.50."}
	})
	defer srv.Close()
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
	tools = append(tools, readOrders)
	model := driver.Mux{llm.Driver: client.Device()}
	for _, mode := range []struct {
		name string
		opts journal.Options
	}{{"whole", journal.Options{NoChunks: true}}, {"chunked", journal.Options{}}} {
		b.Run(mode.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "journal.db")
			j, err := journal.Open(path, mode.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			run, err := j.Begin(journal.RunMeta{Kind: agent.Kind, Args: json.RawMessage(`{"task":"bench"}`)})
			if err != nil {
				b.Fatal(err)
			}
			run.Durable()
			opts := agent.Options{LLM: driver.Chain(model, run.Middleware()), Journal: run.Middleware(), Tools: tools, MaxSteps: conversationTurns}
			res, err := agent.Run(context.Background(), opts, "Sum the totals of the orders of every day.")
			if err != nil || res.Reason != agent.ReasonAnswer || res.Steps != conversationTurns {
				b.Fatalf("%+v %v", res, err)
			}
			if err := run.End(journal.StatusOK, nil, nil); err != nil {
				b.Fatal(err)
			}
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			used := usedPages(b, path)
			if j, err = journal.Open(path, mode.opts); err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			sent := srv.Requests()
			var load time.Duration
			cpu := benchutil.CPUTime()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				rep, err := j.Replayer(run.ID())
				if err != nil {
					b.Fatal(err)
				}
				load += time.Since(start)
				opts := agent.Options{LLM: driver.Chain(model, rep.Middleware()), Journal: rep.Middleware(), Tools: tools, MaxSteps: conversationTurns}
				res, err := agent.Run(context.Background(), opts, "Sum the totals of the orders of every day.")
				if err != nil || res.Reason != agent.ReasonAnswer {
					b.Fatalf("replay: %+v %v", res, err)
				}
				if d := rep.Finish(); d != nil {
					b.Fatalf("the replay diverged: %v", d)
				}
			}
			b.StopTimer()
			benchutil.ReportCPU(b, cpu)
			if srv.Requests() != sent {
				b.Fatalf("the replays sent %d model requests", srv.Requests()-sent)
			}
			b.ReportMetric(float64(fi.Size()), "journal-B")
			b.ReportMetric(float64(used), "used-B")
			b.ReportMetric(float64(load.Nanoseconds())/float64(b.N), "load-ns/op")
		})
	}
}

// usedPages is what the bbolt file at path holds: its pages less the free
// ones (the file itself grows in steps).
func usedPages(b *testing.B, path string) int64 {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var used int64
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	return used - int64(db.Stats().FreePageN)*int64(db.Info().PageSize)
}

// readOrders is the benchmark's tool: a day's orders, about 1.5 KiB of
// JSON, different every day.
var readOrders = kerneltool.Tool{
	Name:        "read_orders",
	Description: "Read the orders of one day and return them as JSON.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"day":{"type":"integer","description":"the day, from 0"}},"required":["day"]}`),
	Call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		var a struct {
			Day int `json:"day"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		orders := make([]string, 30)
		for i := range orders {
			orders[i] = fmt.Sprintf(`{"id":"D%03d-%02d","total":%d.50}`, a.Day, i, 10+(a.Day*7+i)%90)
		}
		return json.RawMessage(`{"day":` + fmt.Sprint(a.Day) + `,"orders":[` + strings.Join(orders, ",") + `]}`), nil
	},
}
