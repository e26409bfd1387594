package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// goldenRun is one recorded scenario of TestGoldenRunJournals: it drives
// rt (whose model is the scripted server of steps, or of respond) and
// checks the outcome is the one the golden stands for.
type goldenRun struct {
	name    string
	steps   []llmtest.Step
	respond func(llmtest.Received) llmtest.Step
	drive   func(t *testing.T, rt *host.Runtime)
}

// goldenRuns are the forge, agent and tournament runs kept as golden
// journals in testdata/golden/runs, a good and a bad one of each kind.
var goldenRuns = []goldenRun{
	{name: "forge-good", steps: []llmtest.Step{forgeCrashSubmit(forgeCrashFib)}, drive: func(t *testing.T, rt *host.Runtime) {
		if res, err := forgeOn(rt, "a tool that returns the n-th Fibonacci number"); err != nil || res.Path != forgeCrashPath {
			t.Fatalf("the forge did not make its tool: %+v %v", res, err)
		}
	}},
	{name: "forge-bad-tests-fail", steps: []llmtest.Step{forgeCrashSubmit(forgeCrashBuggy)}, drive: func(t *testing.T, rt *host.Runtime) {
		if _, err := forgeOn(rt, "a tool that returns the n-th Fibonacci number"); err == nil {
			t.Fatal("a forge whose tests fail on its only attempt succeeded")
		}
	}},
	{name: "agent-good", steps: []llmtest.Step{
		toolCall("c1", "exec_tool", `{"path":"tools/math/fib.ts","args":{"n":20}}`),
		// The usage is given: the scripted model would estimate it from the
		// request's length, and the tool result in it holds the run's
		// duration_ns, whose number of digits varies with the machine's load.
		{Content: "fib(20) is 6765", Usage: llm.Usage{PromptTokens: 259, CompletionTokens: 4, TotalTokens: 263}},
	}, drive: func(t *testing.T, rt *host.Runtime) {
		writeFib(t, rt)
		res, err := rt.RunAgent(context.Background(), "What is the 20th Fibonacci number?", host.AgentOptions{Name: "asker"})
		if err != nil || res.Reason != agent.ReasonAnswer || len(res.Calls) != 1 || res.Calls[0].Error != "" {
			t.Fatalf("%+v %v", res, err)
		}
	}},
	{name: "agent-bad-tool-errors", steps: []llmtest.Step{
		toolCall("c1", "read_file", `{"path":"agentos.json"}`),
		{Content: "I may not read the configuration"},
	}, drive: func(t *testing.T, rt *host.Runtime) {
		res, err := rt.RunAgent(context.Background(), "Read the configuration.", host.AgentOptions{Name: "asker"})
		if err != nil || res.Reason != agent.ReasonAnswer || len(res.Calls) != 1 || !strings.Contains(res.Calls[0].Error, `lacks the "read" right`) {
			t.Fatalf("the agent's tool call did not fail: %+v %v", res, err)
		}
	}},
	{name: "tournament-good", respond: tournamentStep, drive: func(t *testing.T, rt *host.Runtime) {
		basePersona(t, rt)
		rep, err := rt.Tournament(context.Background(), host.TournamentOptions{Persona: "quiz", Tasks: tournamentTasks, Variants: 3, DryRun: true})
		if err != nil || rep.Winner != "v2" {
			t.Fatalf("winner %q, %v", rep.Winner, err)
		}
	}},
	{name: "tournament-bad-variants-lose", respond: losingTournamentStep, drive: func(t *testing.T, rt *host.Runtime) {
		basePersona(t, rt)
		rep, err := rt.Tournament(context.Background(), host.TournamentOptions{Persona: "quiz", Tasks: tournamentTasks, Variants: 2, DryRun: true})
		if err != nil || rep.Winner != "baseline" || rep.Improved {
			t.Fatalf("winner %q (improved %v), %v", rep.Winner, rep.Improved, err)
		}
	}},
}

// losingTournamentStep is tournamentStep with variants that answer
// nothing right: the baseline (2 of 5) keeps its place.
func losingTournamentStep(r llmtest.Received) llmtest.Step {
	if sys := r.Messages[0].Content; strings.HasPrefix(sys, "PROMPT-V") {
		return llmtest.Step{Content: "I don't know"}
	}
	return tournamentStep(r)
}

// TestGoldenRunJournals records each of goldenRuns against the scripted
// model over HTTP on loopback and compares every run of its journal (the
// run and its children, as journal.Export dumps them), normalised, with
// testdata/golden/runs/NAME.json. A change in what a forge, an agent or a
// tournament records, the shape of a record above all (a field renamed,
// added, dropped or re-typed), fails it: the journals already written must
// stay readable, so such a change is made on purpose, with -update, and
// said in docs/REPLAY.md.
func TestGoldenRunJournals(t *testing.T) {
	dir := filepath.Join("testdata", "golden", "runs")
	for _, g := range goldenRuns {
		t.Run(g.name, func(t *testing.T) {
			got := recordGoldenRun(t, g)
			file := filepath.Join(dir, g.name+".json")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v: run go test ./tests/e2e -run TestGoldenRunJournals -update to record it", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the %s journal differs from %s (a record's shape or content changed; if on purpose, rerun with -update and say so in docs/REPLAY.md):\n%s", g.name, file, firstDifference(want, got))
			}
		})
	}
}

// recordGoldenRun runs g on a fresh tool root and returns its journal's
// runs, oldest first, normalised and indented.
func recordGoldenRun(t *testing.T, g goldenRun) []byte {
	t.Helper()
	var srv *llmtest.Server
	if g.respond != nil {
		srv = llmtest.NewResponder(g.respond)
	} else {
		srv = llmtest.NewServer(g.steps)
	}
	defer srv.Close()
	root := t.TempDir()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted", ForgeAttempts: 1}})
	g.drive(t, rt)
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	runs, err := rt.Journal().Runs()
	if err != nil {
		t.Fatal(err)
	}
	dumps := make([]journal.Dump, 0, len(runs))
	for _, r := range runs {
		d, err := rt.Journal().Export(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, d)
	}
	b, err := json.Marshal(dumps)
	if err != nil {
		t.Fatal(err)
	}
	return normaliseJournal(t, b, root)
}

var (
	goldenRunID  = regexp.MustCompile(`\d{8}-\d{6}\.\d{3}-[0-9a-f]{6}`)
	goldenTime   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
	goldenCommit = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	// goldenToken is a random id: a capability token's, a forge request's.
	goldenToken = regexp.MustCompile(`\b[0-9a-f]{24}\b`)
	// goldenDuration is a duration inside a JSON text kept as a string (a
	// tool result the model was sent).
	goldenDuration = regexp.MustCompile(`(_ns\\?"\s*:\s*)\d+`)
)

// goldenVolatile are the keys whose values differ from one recording to
// the next, and what they become: the process and boot the run was on
// (journal.Host), a candidate's fitness
// (it weighs its wall time).
var goldenVolatile = map[string]any{
	"host_pid":  json.Number("0"),
	"host_boot": "<boot>",
	"fitness":   json.Number("0"),
}

// normaliseJournal rewrites what differs from one recording to the next:
// run ids become run-1, run-2 ... in order of first appearance, times
// "<time>", durations 0, Git commits "<commit>", random ids (tokens,
// requests) "<id>", the tool root "<root>" and goldenVolatile's keys. Everything else, every key and every value's type, stays.
func normaliseJournal(t *testing.T, b []byte, root string) []byte {
	t.Helper()
	ids := map[string]string{}
	s := strings.ReplaceAll(string(b), root, "<root>")
	s = goldenRunID.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("run-%d", len(ids)+1)
		}
		return ids[id]
	})
	s = goldenCommit.ReplaceAllString(s, "<commit>")
	s = goldenToken.ReplaceAllString(s, "<id>")
	s = goldenDuration.ReplaceAllString(s, "${1}0")
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(normaliseValue("", v)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// normaliseValue is normaliseJournal's walk over one decoded value, under key.
func normaliseValue(key string, v any) any {
	if to, ok := goldenVolatile[key]; ok {
		if _, str := v.(string); str == isString(to) {
			return to
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normaliseValue(k, e)
		}
	case []any:
		for i, e := range v {
			v[i] = normaliseValue(key, e)
		}
	case string:
		if goldenTime.MatchString(v) {
			return "<time>"
		}
	case json.Number:
		if strings.HasSuffix(key, "_ns") || strings.HasSuffix(key, "_ms") {
			return json.Number("0")
		}
	}
	return v
}

func isString(v any) bool { _, ok := v.(string); return ok }

// firstDifference shows the first line where got leaves want.
func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, a, b)
		}
	}
	return ""
}
