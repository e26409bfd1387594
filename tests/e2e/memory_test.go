package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/memory"
)

// checkShape checks what every request of a paged conversation MUST look
// like: the system prompt first, the task second, and no tool result
// without the assistant message that called it right before.
func checkShape(task string) func(llmtest.Received) error {
	return func(r llmtest.Received) error {
		if len(r.Messages) < 2 || r.Messages[0].Role != llm.RoleSystem || r.Messages[1].Role != llm.RoleUser || r.Messages[1].Content != task {
			return errors.New("the system prompt and the task are not the first two messages")
		}
		calls := map[string]bool{}
		for i, m := range r.Messages {
			switch {
			case m.Role == llm.RoleAssistant:
				calls = map[string]bool{}
				for _, tc := range m.ToolCalls {
					calls[tc.ID] = true
				}
			case m.Role == llm.RoleTool:
				if !calls[m.ToolCallID] {
					return fmt.Errorf("message %d: a tool result (%s) without its call", i, m.ToolCallID)
				}
			default:
				calls = map[string]bool{}
			}
		}
		return nil
	}
}

// serverTokens is the prompt size the scripted model counts (llmtest's
// rough count: what the pager calibrates against).
func serverTokens(r llmtest.Received) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content) + 4
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return n/4 + 1
}

// A conversation four times the model's window completes: the oldest turns
// are paged out (never the system prompt or the task, never a call without
// its result), every request fits the window, and a fact read in the first
// turn, long paged out, comes back through recall into the model's context.
func TestAgentConversationFourTimesTheWindow(t *testing.T) {
	const (
		window = 8192
		fact   = "The launch code for project Zephyr is 7-4-1-9."
		task   = "Read the Zephyr documents in tools/docs, then tell me the launch code."
		parts  = 18
	)
	root := t.TempDir()
	docs := filepath.Join(root, "tools", "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	// The fact is deep in the file: the paging note's extract of the turn
	// (the start of its result) does not hold it.
	preamble := strings.Repeat("This document describes the Zephyr project, its schedule and its owners. ", 8)
	if err := os.WriteFile(filepath.Join(docs, "launch.txt"), []byte(preamble+fact+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := 0 // bytes of tool results the conversation holds in total
	for i := range parts {
		var b strings.Builder
		for b.Len() < 8<<10 { // about 2k tokens each
			fmt.Fprintf(&b, "Section %d.%d: the Zephyr rollout plan covers region %d, rack %d, with checks before and after each step. ", i, b.Len(), i*7+b.Len()%13, b.Len()%101)
		}
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("part-%02d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		read += b.Len()
	}
	shape := checkShape(task)
	maxSeen := 0
	step := func(s llmtest.Step, extra func(llmtest.Received) error) llmtest.Step {
		s.Check = func(r llmtest.Received) error {
			if err := shape(r); err != nil {
				return err
			}
			if n := serverTokens(r); n > window {
				return fmt.Errorf("a request of %d tokens, over the %d-token window", n, window)
			} else {
				maxSeen = max(maxSeen, n)
			}
			if extra != nil {
				return extra(r)
			}
			return nil
		}
		return s
	}
	script := []llmtest.Step{step(toolCall("c0", "read_file", `{"path":"tools/docs/launch.txt"}`), nil)}
	for i := range parts {
		script = append(script, step(toolCall(fmt.Sprintf("c%d", i+1), "read_file", fmt.Sprintf(`{"path":"tools/docs/part-%02d.txt"}`, i)), nil))
	}
	script = append(script,
		step(toolCall("recall", "recall", `{"query":"Zephyr launch code"}`), func(r llmtest.Received) error {
			for _, m := range r.Messages {
				if strings.Contains(m.Content, "7-4-1-9") {
					return errors.New("the first turn's fact is still in context: nothing was paged out")
				}
			}
			if !strings.Contains(r.Messages[2].Content, "[context paging]") {
				return fmt.Errorf("no paging note after the task: %.200q", r.Messages[2].Content)
			}
			return nil
		}),
		step(llmtest.Step{Content: "The launch code is 7-4-1-9."}, func(r llmtest.Received) error {
			last := r.Messages[len(r.Messages)-1]
			if last.Role != llm.RoleTool || !strings.Contains(last.Content, "7-4-1-9") {
				return fmt.Errorf("recall did not bring the fact back into context: %.300q", last.Content)
			}
			return nil
		}),
	)
	srv := llmtest.NewServer(script)
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}, Memory: host.MemoryConfig{WindowTokens: window}})
	res, err := rt.RunAgent(context.Background(), task, host.AgentOptions{Name: "reader", MaxSteps: len(script)})
	if err != nil || srv.Err() != nil {
		t.Fatalf("%v; the model saw: %v", err, srv.Err())
	}
	if res.Reason != agent.ReasonAnswer || !strings.Contains(res.Answer, "7-4-1-9") || res.Steps != len(script) {
		t.Fatalf("result = %+v", res)
	}
	if read/4 < 4*window {
		t.Fatalf("the conversation held %d tokens of results: not four times the %d-token window", read/4, window)
	}
	if res.Paged < parts/2 || maxSeen < window/2 {
		t.Fatalf("paged %d turns, largest request %d tokens: the window was not used", res.Paged, maxSeen)
	}
	// The pages are the agent's memory, tagged and tied to its run.
	pages, err := rt.MemoryItems("reader", memory.Page)
	if err != nil || len(pages) != res.Paged {
		t.Fatalf("%d pages in memory (%v), %d paged", len(pages), err, res.Paged)
	}
	if !strings.Contains(pages[0].Text, "7-4-1-9") || pages[0].Run == "" || !strings.Contains(strings.Join(pages[0].Tags, ","), "read_file") {
		t.Fatalf("the first page = %+v", pages[0])
	}
}

// A run whose latest turn alone does not fit the window ends with a clear
// reason instead of sending a request the model would refuse.
func TestAgentTurnLargerThanTheWindow(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "huge.txt"), []byte(strings.Repeat("zephyr ", 8000)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer([]llmtest.Step{toolCall("c", "read_file", `{"path":"tools/huge.txt"}`), {Content: "never asked"}})
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	res, err := rt.RunAgent(context.Background(), "read it", host.AgentOptions{WindowTokens: 4096})
	var we *agent.WindowError
	if !errors.As(err, &we) || res.Reason != agent.ReasonWindow || srv.Requests() != 1 || !strings.Contains(err.Error(), "memory.window_tokens") {
		t.Fatalf("result %+v, error %v, %d requests", res, err, srv.Requests())
	}
}

// Long-term memory survives a restart of the runtime on the same root: what
// an agent remembered in one run, it recalls in a run of the next runtime,
// and the Go API sees it too.
func TestMemorySurvivesRestart(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.NewServer([]llmtest.Step{
		toolCall("r", "remember", `{"text":"The customer prefers delivery by Colissimo.","kind":"preference","tags":["acme"]}`),
		{Content: "noted"},
	})
	rt, err := host.Start(context.Background(), host.Config{Root: root, Isolation: "inprocess", Logger: quiet, LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.RunAgent(context.Background(), "Remember how ACME wants its parcels sent.", host.AgentOptions{Name: "alice"})
	if err != nil || res.Calls[0].Error != "" || srv.Err() != nil {
		t.Fatalf("%+v %v %v", res, err, srv.Err())
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	srv = llmtest.NewServer([]llmtest.Step{
		toolCall("q", "recall", `{"query":"how does ACME want delivery"}`),
		{Content: "By Colissimo.", Check: func(r llmtest.Received) error {
			if last := r.Messages[len(r.Messages)-1]; !strings.Contains(last.Content, "Colissimo") {
				return fmt.Errorf("recall after a restart answered %q", last.Content)
			}
			return nil
		}},
	})
	defer srv.Close()
	rt = start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	res, err = rt.RunAgent(context.Background(), "How should ACME's parcel go?", host.AgentOptions{Name: "alice"})
	if err != nil || srv.Err() != nil || res.Answer != "By Colissimo." {
		t.Fatalf("%+v %v %v", res, err, srv.Err())
	}
	hits, err := rt.Recall("alice", "Colissimo delivery", memory.RecallOptions{})
	if err != nil || len(hits) != 1 || hits[0].Kind != memory.Preference || hits[0].Tags[0] != "acme" {
		t.Fatalf("Runtime.Recall = %+v, %v", hits, err)
	}
}

// An agent reads another agent's memory only with the memory_read right on
// its name: without it the recall is refused (and the model told why),
// with it the recall answers, and the right's scope is respected.
func TestMemoryReadNeedsTheRight(t *testing.T) {
	root := t.TempDir()
	ask := func(agentName string) llmtest.Step {
		return toolCall("q", "recall", fmt.Sprintf(`{"query":"launch code","agent":%q}`, agentName))
	}
	lastTool := ""
	keep := func(r llmtest.Received) error { lastTool = r.Messages[len(r.Messages)-1].Content; return nil }
	srv := llmtest.NewServer([]llmtest.Step{
		ask("alice"), {Content: "done", Check: keep}, // mallory: no right
		ask("alice"), {Content: "done", Check: keep}, // auditor: memory_read on alice
		ask("bob"), {Content: "done", Check: keep}, //    ... but not on bob
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	if _, _, err := rt.Remember("alice", memory.Item{Text: "The launch code is 7419."}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.Remember("bob", memory.Item{Text: "Bob's launch code is 1234."}); err != nil {
		t.Fatal(err)
	}
	grants := host.Config{}.DefaultGrants()

	res, err := rt.RunAgent(context.Background(), "find alice's code", host.AgentOptions{Name: "mallory", Grants: grants})
	if err != nil || !strings.Contains(res.Calls[0].Error, `"memory_read"`) || !strings.Contains(lastTool, "reading agent \"alice\"'s memory") || strings.Contains(lastTool, "7419") {
		t.Fatalf("without the right: %+v %v; the model saw %q", res, err, lastTool)
	}
	auditor := append(grants, capability.Grant{Right: capability.MemoryRead, Scope: "alice"})
	res, err = rt.RunAgent(context.Background(), "find alice's code", host.AgentOptions{Name: "auditor", Grants: auditor})
	if err != nil || res.Calls[0].Error != "" || !strings.Contains(lastTool, "7419") {
		t.Fatalf("with the right: %+v %v; the model saw %q", res, err, lastTool)
	}
	res, err = rt.RunAgent(context.Background(), "find bob's code", host.AgentOptions{Name: "auditor", Grants: auditor})
	if err != nil || !strings.Contains(res.Calls[0].Error, `"memory_read"`) || strings.Contains(lastTool, "1234") {
		t.Fatalf("outside the right's scope: %+v %v; the model saw %q", res, err, lastTool)
	}
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	// The refusals are kernel events like every other.
	refused := 0
	for _, ev := range rt.Kernel().Events(0, 0) {
		if string(ev.Kind) == "refused" && strings.Contains(ev.Detail+ev.Reason, "memory_read") {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("%d refused events for memory_read, want 2", refused)
	}
}

// A named agent's finished run is distilled into lessons (one journaled
// model call) kept in its memory; its next run on a related task gets them
// in its system prompt (a journaled memory call), and an unrelated task
// does not.
func TestDistilledLessonsReachTheNextRun(t *testing.T) {
	root := t.TempDir()
	const lesson = "Always check the invoice currency before summing amounts."
	var system []string
	keep := func(r llmtest.Received) error { system = append(system, r.Messages[0].Content); return nil }
	srv := llmtest.NewServer([]llmtest.Step{
		{Content: "The total is 1200 EUR."},
		{Content: "- " + lesson + "\n2. ok\n3) Convert every amount to one currency first, with the rate of the invoice date.", Check: func(r llmtest.Received) error {
			if r.Messages[0].Content != agent.DistillPrompt || !strings.Contains(r.Messages[1].Content, "1200 EUR") {
				return fmt.Errorf("the distiller was not sent the transcript: %q", r.Messages[1].Content)
			}
			return nil
		}},
		{Content: "Sum done.", Check: keep},
		{Content: "Hello.", Check: keep},
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	res, err := rt.RunAgent(context.Background(), "Sum the invoices of March.", host.AgentOptions{Name: "accountant", Distill: true})
	if err != nil || len(res.Lessons) != 2 || res.Lessons[0] != lesson {
		t.Fatalf("%+v %v", res, err)
	}
	lessons, err := rt.MemoryItems("accountant", memory.Lesson)
	if err != nil || len(lessons) != 2 || lessons[0].Run == "" || lessons[0].Tags[0] != "distilled" {
		t.Fatalf("lessons in memory: %+v %v", lessons, err)
	}
	// The distillation is a call of the agent's journaled run.
	meta, err := rt.Journal().Get(lessons[0].Run)
	if err != nil || meta.Kind != "agent" {
		t.Fatalf("the lessons' run: %+v %v", meta, err)
	}
	entries, err := rt.Journal().Entries(meta.ID)
	if err != nil || len(entries) != 3 || entries[0].Driver != memory.Driver || entries[2].Driver != llm.Driver || !strings.Contains(string(entries[2].Request), "distill") {
		t.Fatalf("the agent run's journal: %d entries %v", len(entries), err)
	}
	if _, err := rt.RunAgent(context.Background(), "Sum the invoice amounts for April.", host.AgentOptions{Name: "accountant"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunAgent(context.Background(), "Say hello to the team.", host.AgentOptions{Name: "accountant"}); err != nil {
		t.Fatal(err)
	}
	if srv.Err() != nil {
		t.Fatal(srv.Err())
	}
	if len(system) != 2 || !strings.Contains(system[0], "Lessons from past work") || !strings.Contains(system[0], lesson) {
		t.Fatalf("the related run's system prompt: %q", system)
	}
	if strings.Contains(system[1], "Lessons from past work") {
		t.Fatalf("an unrelated task got lessons: %q", system[1])
	}
	if _, err := rt.RunAgent(context.Background(), "x", host.AgentOptions{Distill: true}); err == nil || !strings.Contains(err.Error(), "needs a Name") {
		t.Fatalf("Distill without a name: %v", err)
	}
}

// A forge recalls the lessons about similar specs (its caller's and the
// "forge" agent's) into its prompt before asking the model, as a journaled
// call of its run.
func TestForgeRecallsLessons(t *testing.T) {
	root := t.TempDir()
	var system string
	srv := llmtest.NewServer([]llmtest.Step{{Status: 400, Error: "stop here", Check: func(r llmtest.Received) error {
		system = r.Messages[0].Content
		return nil
	}}})
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	const lesson = "For CSV parsing tools, handle quoted fields that contain commas."
	if _, _, err := rt.Remember("forge", memory.Item{Kind: memory.Lesson, Text: lesson}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.Remember("forge", memory.Item{Kind: memory.Lesson, Text: "Round currency amounts to cents only at the end."}); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Call(context.Background(), "forge_tool", []byte(`{"spec":"parse a CSV file of orders into rows"}`))
	if err == nil || !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("forge_tool: %v", err)
	}
	if !strings.Contains(system, "Lessons from past work") || !strings.Contains(system, lesson) || strings.Contains(system, "currency") {
		t.Fatalf("the forge's system prompt: %q", system)
	}
}

// With pii on, a lesson an operator wrote with personal data reaches the
// model and the journal as tokens: the lessons call is tokenized below the
// journal, like a data driver's answer.
func TestLessonsAreTokenized(t *testing.T) {
	root := t.TempDir()
	var system string
	srv := llmtest.NewServer([]llmtest.Step{{Content: "ok", Check: func(r llmtest.Received) error { system = r.Messages[0].Content; return nil }}})
	defer srv.Close()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", PII: host.PIIConfig{Detect: []string{"email"}},
		LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	if _, _, err := rt.Remember("support", memory.Item{Kind: memory.Lesson, Text: "Escalate refund requests to ada@example.com before answering."}); err != nil {
		t.Fatal(err)
	}
	res, err := rt.RunAgent(context.Background(), "Answer a refund request.", host.AgentOptions{Name: "support"})
	if err != nil || srv.Err() != nil {
		t.Fatalf("%+v %v %v", res, err, srv.Err())
	}
	if !strings.Contains(system, "Escalate refund requests to PII_EMAIL_") || strings.Contains(system, "ada@example.com") {
		t.Fatalf("the system prompt: %q", system)
	}
	runs, _ := rt.Journal().Runs()
	for _, r := range runs {
		d, err := rt.Journal().Export(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		if strings.Contains(string(b), "ada@example.com") {
			t.Fatalf("run %s journaled the real e-mail", r.ID)
		}
	}
}
