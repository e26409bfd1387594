// Command agents-memory shows agents that remember, against a scripted model
// on loopback (package driver/llm/llmtest; no network, no API key):
//
//	go run ./examples/agents-memory
//
// First an agent reads nineteen documents, four times its model's 8k-token
// window: its oldest turns are paged out to its memory, every request fits
// the window, and at the end recall brings back a fact read in the first
// turn; the run is distilled into lessons kept in its memory. Then the
// runtime is closed and started again on the same root: the same agent gets
// its lessons in its system prompt and recalls last run's page. Last,
// another agent without the memory_read right cannot read it.
//
// It exits 1 if any of this does not happen as described.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/memory"
)

const (
	window = 8192
	parts  = 18
	fact   = "The launch code for project Zephyr is 7-4-1-9."
	lesson = "For the Zephyr documents, recall the launch code from memory instead of reading every part again."
)

func call(id, name, args string) llmtest.Step {
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

// tokens is the prompt size the scripted model counts for a request.
func tokens(r llmtest.Received) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content) + 4
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return n/4 + 1
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "agentos-agents-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	if err := writeDocs(root); err != nil {
		return err
	}

	// 1. Four times the window, paged; the first turn's fact recalled.
	largest, lastTool := 0, ""
	watch := func(s llmtest.Step) llmtest.Step {
		s.Check = func(r llmtest.Received) error {
			largest = max(largest, tokens(r))
			lastTool = r.Messages[len(r.Messages)-1].Content
			return nil
		}
		return s
	}
	script := []llmtest.Step{watch(call("c0", "read_file", `{"path":"tools/docs/launch.txt"}`))}
	for i := range parts {
		script = append(script, watch(call(fmt.Sprintf("c%d", i+1), "read_file", fmt.Sprintf(`{"path":"tools/docs/part-%02d.txt"}`, i))))
	}
	script = append(script,
		watch(call("r", "recall", `{"query":"Zephyr launch code"}`)),
		watch(llmtest.Step{Content: "The launch code is 7-4-1-9."}),
		llmtest.Step{Content: "- " + lesson + "\n- Read long documents one at a time."}, // the distiller
	)
	srv := llmtest.NewServer(script)
	defer srv.Close()
	cfg := host.Config{Root: root, Isolation: "inprocess", Logger: slog.New(slog.DiscardHandler),
		LLM:    host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"},
		Memory: host.MemoryConfig{WindowTokens: window}}
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	res, err := rt.RunAgent(ctx, "Read the Zephyr documents in tools/docs, then tell me the launch code.", host.AgentOptions{Name: "analyst", MaxSteps: 25, Distill: true})
	if err != nil {
		return err
	}
	fmt.Printf("run 1: %d steps, %d turns paged out, largest request %d tokens (window %d)\n", res.Steps, res.Paged, largest, window)
	fmt.Printf("run 1: recall brought the first turn's fact back into context: %v\n", strings.Contains(lastTool, fact))
	fmt.Printf("run 1: answer %q; lessons distilled: %d\n", res.Answer, len(res.Lessons))
	if res.Paged == 0 || largest > window || !strings.Contains(lastTool, "7-4-1-9") || len(res.Lessons) != 2 {
		return errors.New("the conversation was not paged, did not fit, or the fact did not come back")
	}
	if err := rt.Close(); err != nil {
		return err
	}
	srv.Close()

	// 2. A new runtime on the same root: lessons in the prompt, last run's
	// page recalled.
	var system string
	srv = llmtest.NewServer([]llmtest.Step{
		{ToolCalls: []llm.ToolCall{{ID: "r", Name: "recall", Arguments: `{"query":"launch code","kind":"page"}`}}, Check: func(r llmtest.Received) error {
			system = r.Messages[0].Content
			return nil
		}},
		watch(llmtest.Step{Content: "Still 7-4-1-9."}),
		call("x", "recall", `{"query":"launch code","agent":"analyst"}`),
		watch(llmtest.Step{Content: "I may not."}),
	})
	defer srv.Close()
	cfg.LLM.BaseURL = srv.URL()
	if rt, err = host.Start(ctx, cfg); err != nil {
		return err
	}
	defer rt.Close()
	if _, err := rt.RunAgent(ctx, "Read the Zephyr documents again and remind me of the launch code.", host.AgentOptions{Name: "analyst"}); err != nil {
		return err
	}
	fmt.Printf("run 2 (after a restart): lessons in the system prompt: %v\n", strings.Contains(system, lesson))
	fmt.Printf("run 2 (after a restart): recall found last run's page: %v\n", strings.Contains(lastTool, "7-4-1-9"))
	if !strings.Contains(system, lesson) || !strings.Contains(lastTool, "7-4-1-9") {
		return errors.New("the memory did not survive the restart")
	}

	// 3. Another agent, without memory_read on "analyst".
	res, err = rt.RunAgent(ctx, "Find the analyst's launch code.", host.AgentOptions{Name: "intern"})
	if err != nil {
		return err
	}
	fmt.Printf("intern: recall of analyst's memory: %s\n", extract(res.Calls[0].Error, "lacks"))
	if !strings.Contains(res.Calls[0].Error, `lacks the "memory_read" right on "analyst"`) || strings.Contains(lastTool, "7-4-1-9") {
		return errors.New("an agent without the right read another's memory")
	}
	agents, err := rt.MemoryAgents()
	if err != nil {
		return err
	}
	for _, a := range agents {
		fmt.Printf("memory of %s: %d pages, %d lessons\n", a.Name, a.ByKind[memory.Page], a.ByKind[memory.Lesson])
	}
	if err := srv.Err(); err != nil {
		return err
	}
	fmt.Println("OK: paged four windows, recalled the first turn, remembered across a restart, refused a reader without the right")
	return nil
}

// extract is s from the first occurrence of from, on one line, at most 70
// bytes.
func extract(s, from string) string {
	if i := strings.Index(s, from); i >= 0 {
		s = s[i:]
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 70 {
		s = s[:70] + "..."
	}
	return s
}

// writeDocs writes the documents: the fact deep in the first one, then
// parts of about 2k tokens each.
func writeDocs(root string) error {
	docs := filepath.Join(root, "tools", "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		return err
	}
	preamble := strings.Repeat("This document describes the Zephyr project, its schedule and its owners. ", 8)
	if err := os.WriteFile(filepath.Join(docs, "launch.txt"), []byte(preamble+fact+"\n"), 0o644); err != nil {
		return err
	}
	for i := range parts {
		var b strings.Builder
		for b.Len() < 8<<10 {
			fmt.Fprintf(&b, "Section %d.%d: the Zephyr rollout plan covers region %d, with checks before and after each step. ", i, b.Len(), i*7+b.Len()%13)
		}
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("part-%02d.txt", i)), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
