package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/persona"
)

func basePersona(t *testing.T, rt *host.Runtime) persona.Persona {
	t.Helper()
	p, err := rt.SavePersona(context.Background(), basePersonaValue)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A tournament over 3 variants and 5 tasks against the scripted model
// picks the expected winner and saves it as the persona's new version;
// its replay makes zero model requests and reports the same table.
func TestTournamentPicksTheWinnerAndReplaysOffline(t *testing.T) {
	srv := tournamentModel(nil)
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	base := basePersona(t, rt)
	rep, err := rt.Tournament(context.Background(), host.TournamentOptions{Persona: "quiz", Tasks: tournamentTasks, Variants: 3})
	if err != nil || srv.Err() != nil {
		t.Fatalf("%v %v", err, srv.Err())
	}
	if want := 3 + 4*5; srv.Requests() != want || rep.Calls != want {
		t.Fatalf("model requests = %d, calls = %d; want %d (3 variants written, 4 candidates x 5 tasks)", srv.Requests(), rep.Calls, want)
	}
	if rep.Winner != "v2" || !rep.Improved || rep.Ranked[0].Label != "v2" || rep.Ranked[0].Score != 5 {
		t.Fatalf("winner %s (improved %v)\n%s", rep.Winner, rep.Improved, rep.Table())
	}
	labels := []string{}
	for _, c := range rep.Ranked {
		labels = append(labels, c.Label)
	}
	if got := strings.Join(labels, ","); got != "v2,v3,v1,baseline" {
		t.Fatalf("ranking %s\n%s", got, rep.Table())
	}
	// The winner is the persona's new version, derived from the base.
	cur, err := rt.Personas().Get("quiz")
	if err != nil || cur.System != "PROMPT-V2" || cur.Parent != base.Version || cur.Origin != "tournament "+rep.Run || rep.Saved == nil || rep.Saved.Version != cur.Version {
		t.Fatalf("current persona %+v (saved %+v) %v", cur, rep.Saved, err)
	}
	if old, err := rt.Personas().Get("quiz@" + base.Version); err != nil || old.System != base.System {
		t.Fatalf("the base version: %+v %v", old, err)
	}
	meta, err := rt.Journal().Get(rep.Run)
	if err != nil || meta.Kind != host.TournamentKind || meta.Status != journal.StatusOK {
		t.Fatalf("run %+v %v", meta, err)
	}
	// Replay: zero model requests, the same table.
	before := srv.Requests()
	again, err := rt.ReplayTournament(context.Background(), rep.Run)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != before {
		t.Fatalf("the replay sent %d model requests", srv.Requests()-before)
	}
	if !again.Replayed || again.Winner != "v2" || again.Table() != rep.Table() || again.Saved != nil {
		t.Fatalf("replayed:\n%s\noriginal:\n%s", again.Table(), rep.Table())
	}
}

// A tournament cancelled halfway (as a crash would leave it) is resumed
// after a restart: the answers it had are not asked again.
func TestTournamentResumesAfterARestart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := tournamentModel(func(n int) {
		if n == 10 {
			cancel() // the 10th request is interrupted: its answer is never recorded
		}
	})
	defer srv.Close()
	root := t.TempDir()
	cfg := host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}}
	cfg.Logger = quiet
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	basePersona(t, rt)
	rep, err := rt.Tournament(ctx, host.TournamentOptions{Persona: "quiz", Tasks: tournamentTasks, Variants: 3})
	if err == nil {
		t.Fatalf("the cancelled tournament ended: %+v", rep)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != 10 {
		t.Fatalf("requests before the restart = %d, want 10", srv.Requests())
	}
	rt = start(t, cfg)
	meta, err := rt.Journal().Get(rep.Run)
	if err != nil || meta.Status != journal.StatusRunning {
		t.Fatalf("the interrupted tournament: %+v %v", meta, err)
	}
	// What the journal holds was answered: the interrupted 10th request
	// is recorded only when its answer beat the cancellation.
	entries, err := rt.Journal().Entries(rep.Run)
	if err != nil || len(entries) < 9 || len(entries) > 10 {
		t.Fatalf("%d calls journaled before the restart (%v), want 9 or 10", len(entries), err)
	}
	done, err := rt.ResumeTournament(context.Background(), rep.Run)
	if err != nil || srv.Err() != nil {
		t.Fatalf("%v %v", err, srv.Err())
	}
	if srv.Requests() != 10+(23-len(entries)) {
		t.Fatalf("requests = %d with %d answers journaled: the resumed tournament asked again what was answered", srv.Requests(), len(entries))
	}
	if done.Winner != "v2" || done.Saved == nil || done.Calls != 23 {
		t.Fatalf("resumed: winner %s saved %+v calls %d", done.Winner, done.Saved, done.Calls)
	}
	if meta, _ := rt.Journal().Get(rep.Run); meta.Status != journal.StatusOK {
		t.Fatalf("status after the resume: %s", meta.Status)
	}
	// The default process (a new one: no quota, so no ledger) is charged
	// for the answers paid after the restart only, not for the journaled
	// ones the resume replayed.
	var total, journaled int64
	total = done.Generation.TotalTokens
	for _, c := range done.Ranked {
		total += c.Tokens
	}
	for _, e := range entries {
		var r llm.Response
		if err := json.Unmarshal(e.Response, &r); err != nil || r.Usage.TotalTokens <= 0 {
			t.Fatalf("journaled answer %d: %s %v", e.Seq, e.Response, err)
		}
		journaled += r.Usage.TotalTokens
	}
	if used := rt.Agent().Account().Used(capability.LLMTokens); used != float64(total-journaled) {
		t.Fatalf("the default process was charged %v tokens after the resume, want %d (%d in all, %d paid before the restart)", used, total-journaled, total, journaled)
	}
	if _, err := rt.ResumeTournament(context.Background(), rep.Run); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Fatalf("resuming an ended tournament: %v", err)
	}
}

// A tournament whose tasks are scored by a tool journals every score in
// its run: the replay answers them from the journal, running the tool no
// more (no tool run is journaled) and asking no model, and gives the same
// table even after the tool was changed to score everything 0.
func TestTournamentToolScoresReplayOffline(t *testing.T) {
	srv := tournamentModel(nil)
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	basePersona(t, rt)
	const judge = "tools/score/judge.ts"
	writeJudge := func(body string) {
		t.Helper()
		src := "/** Scores an answer. */\nexport default function (args: { input: string; expected: string; answer: string }): number {\n  " + body + "\n}\n"
		call, _ := json.Marshal(map[string]string{"path": judge, "content": src})
		if _, err := rt.Call(context.Background(), "write_file", call); err != nil {
			t.Fatal(err)
		}
	}
	writeJudge("return args.answer.toLowerCase().includes(args.expected.toLowerCase()) ? 1 : 0;")
	toolRuns := func() int { return runsOfTool(t, rt, judge) }
	tasks := tournamentTasks
	tasks.Scorer = persona.Scorer{Kind: persona.ScoreTool, Tool: judge}
	rep, err := rt.Tournament(context.Background(), host.TournamentOptions{Persona: "quiz", Tasks: tasks, Variants: 3})
	if err != nil || srv.Err() != nil {
		t.Fatalf("%v %v", err, srv.Err())
	}
	if rep.Winner != "v2" || rep.Ranked[0].Score != 5 {
		t.Fatalf("winner %s\n%s", rep.Winner, rep.Table())
	}
	for _, c := range rep.Ranked {
		for _, r := range c.Results {
			if r.Error != "" {
				t.Fatalf("%s %s: %s", c.Label, r.Task, r.Error)
			}
		}
	}
	ran := toolRuns()
	if ran != 4*5 {
		t.Fatalf("the scoring tool ran %d times, want 20 (4 candidates x 5 tasks)", ran)
	}
	entries, err := rt.Journal().Entries(rep.Run)
	if err != nil {
		t.Fatal(err)
	}
	scores := 0
	for _, e := range entries {
		if e.Driver == persona.ScoreDriver {
			scores++
			if e.Seq <= 23 || e.Seq > 43 {
				t.Errorf("score call at seq %d: want 24..43, after the 23 model calls", e.Seq)
			}
		}
	}
	if scores != 20 {
		t.Fatalf("%d tool scores journaled in the tournament's run, want 20", scores)
	}
	// The scoring tool changes: the replay still gives the recorded scores.
	writeJudge("return 0;")
	before := srv.Requests()
	again, err := rt.ReplayTournament(context.Background(), rep.Run)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != before || toolRuns() != ran {
		t.Fatalf("the replay sent %d model requests and ran the scoring tool %d times", srv.Requests()-before, toolRuns()-ran)
	}
	if again.Winner != "v2" || again.Table() != rep.Table() {
		t.Fatalf("replayed:\n%s\noriginal:\n%s", again.Table(), rep.Table())
	}
}

// A tournament scored by a tool, cancelled halfway, is resumed: the
// scores its journal holds are not run again, only the missing ones.
func TestTournamentResumeRunsOnlyTheMissingToolScores(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := tournamentModel(func(n int) {
		if n == 10 {
			cancel()
		}
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	basePersona(t, rt)
	const judge = "tools/score/judge.ts"
	src := "/** Scores an answer. */\nexport default function (args: { expected: string; answer: string }): number {\n  return args.answer.toLowerCase().includes(args.expected.toLowerCase()) ? 1 : 0;\n}\n"
	call, _ := json.Marshal(map[string]string{"path": judge, "content": src})
	if _, err := rt.Call(context.Background(), "write_file", call); err != nil {
		t.Fatal(err)
	}
	toolRuns := func() int { return runsOfTool(t, rt, judge) }
	tasks := tournamentTasks
	tasks.Scorer = persona.Scorer{Kind: persona.ScoreTool, Tool: judge}
	rep, err := rt.Tournament(ctx, host.TournamentOptions{Persona: "quiz", Tasks: tasks, Variants: 3})
	if err == nil {
		t.Fatalf("the cancelled tournament ended: %+v", rep)
	}
	entries, err := rt.Journal().Entries(rep.Run)
	if err != nil {
		t.Fatal(err)
	}
	scored := 0
	for _, e := range entries {
		if e.Driver == persona.ScoreDriver {
			scored++
		}
	}
	if scored < 5 || toolRuns() != scored {
		t.Fatalf("before the resume: %d scores journaled, the tool ran %d times", scored, toolRuns())
	}
	done, err := rt.ResumeTournament(context.Background(), rep.Run)
	if err != nil || done.Winner != "v2" {
		t.Fatalf("%v\n%s", err, done.Table())
	}
	if got := toolRuns(); got != 20 {
		t.Fatalf("the scoring tool ran %d times in all (%d before the resume), want 20: the resume ran journaled scores again", got, scored)
	}
}

// A persona written, then chosen when the agent is spawned, reaches the
// model as the system prompt (followed by the kernel-tools protocol,
// unless it says protocol: false); agents.persona is the default.
func TestPersonaReachesTheModel(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{{Content: "one"}, {Content: "two"}, {Content: "three"}, {Content: "four"}})
	defer srv.Close()
	cfg := host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}}
	rt := start(t, cfg)
	ctx := context.Background()
	terse, err := rt.SavePersona(ctx, persona.Persona{Name: "terse", System: "You are terse. Answer in one word."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SavePersona(ctx, persona.Persona{Name: "bare", System: "Only this.", NoProtocol: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunAgent(ctx, "hi", host.AgentOptions{Persona: "terse"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunAgent(ctx, "hi", host.AgentOptions{Persona: "bare"}); err != nil {
		t.Fatal(err)
	}
	// A new version; the old one is still reachable by its version.
	if _, err := rt.SavePersona(ctx, persona.Persona{Name: "terse", System: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunAgent(ctx, "hi", host.AgentOptions{Persona: "terse@" + terse.Version[:6]}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunAgent(ctx, "hi", host.AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	got := srv.Received()
	want := []string{"You are terse. Answer in one word.\n\n" + agent.SystemPrompt, "Only this.", "You are terse. Answer in one word.\n\n" + agent.SystemPrompt, agent.SystemPrompt}
	for i, w := range want {
		if got[i].Messages[0].Role != "system" || got[i].Messages[0].Content != w {
			t.Fatalf("request %d: system prompt %q, want %q", i, got[i].Messages[0].Content, w)
		}
	}
	// The journaled agent run names the persona it ran with.
	runs, _ := rt.Journal().Runs()
	found := false
	for _, r := range runs {
		if r.Kind == "agent" && strings.Contains(string(r.Args), `"persona":"bare@`) {
			found = true
		}
	}
	if !found {
		t.Fatal("no agent run records its persona")
	}
}

// agents.persona is the persona of an agent started without one.
func TestDefaultPersonaFromConfig(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{{Content: "ok"}})
	defer srv.Close()
	root := t.TempDir()
	rt := start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	if _, err := rt.SavePersona(context.Background(), persona.Persona{Name: "house", System: "House style."}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt = start(t, host.Config{Root: root, Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}, Agents: host.AgentsConfig{Persona: "house"}})
	if _, err := rt.RunAgent(context.Background(), "hi", host.AgentOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Received()[0].Messages[0].Content; !strings.HasPrefix(got, "House style.\n\n") {
		t.Fatalf("system prompt %q", got)
	}
}

// A template spawns an agent with its grants (a write it lacks is
// refused), its tools (only those are offered) and its quota (spent, the
// process ends over it).
func TestTemplateSpawnsWithGrantsToolsAndQuota(t *testing.T) {
	srv := llmtest.NewServer([]llmtest.Step{
		toolCall("w", "write_file", `{"path":"tools/x.ts","content":"export default () => 1"}`),
		{Content: "I could not write it."},
		// The second spawn: an answer that costs more than its quota.
		{Content: "too expensive", Usage: llmUsage(500)},
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"},
		Agents: host.AgentsConfig{Templates: map[string]host.AgentTemplate{
			"reader": {Persona: "analyst", Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.LLM}}, Tools: []string{"read_file", "write_file", "list_files"}},
			"cheap":  {Grants: []capability.Grant{{Right: capability.LLM}}, Quota: map[string]float64{"llm_tokens": 100}},
		}}})
	if _, err := rt.SavePersona(context.Background(), persona.Persona{Name: "analyst", System: "You analyse."}); err != nil {
		t.Fatal(err)
	}
	res, err := rt.Spawn(context.Background(), "reader", "write a tool", host.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) != 1 || !strings.Contains(res.Calls[0].Error, `lacks the "write" right`) {
		t.Fatalf("the template's grants were not enforced: %+v", res.Calls)
	}
	first := srv.Received()[0]
	if strings.Join(first.Tools, ",") != "read_file,write_file,list_files" && strings.Join(first.Tools, ",") != "list_files,read_file,write_file" {
		t.Fatalf("tools offered: %v", first.Tools)
	}
	if !strings.HasPrefix(first.Messages[0].Content, "You analyse.") {
		t.Fatalf("system prompt %q", first.Messages[0].Content)
	}
	_, err = rt.Spawn(context.Background(), "cheap", "anything", host.SpawnOptions{})
	var qe *capability.QuotaError
	if err == nil || !(errors.As(err, &qe) || strings.Contains(err.Error(), "quota")) {
		t.Fatalf("over its quota: %v", err)
	}
	// The spawned processes show their template in the events.
	found := false
	for _, e := range rt.Kernel().Events(0, 0) {
		if e.Detail == "agent/reader" {
			found = true
		}
	}
	if !found {
		t.Fatal("no spawn event of image agent/reader")
	}
}

// A template asking for more than its spawner holds fails to spawn, and
// unknown names give errors that list the known ones.
func TestNurseryLimitsAndUnknownNames(t *testing.T) {
	srv := llmtest.NewServer(nil)
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"},
		Agent: host.AgentConfig{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.LLM}, {Right: capability.Spawn}}},
		Agents: host.AgentsConfig{Templates: map[string]host.AgentTemplate{
			"writer": {Grants: []capability.Grant{{Right: capability.Write, Scope: "tools/"}, {Right: capability.LLM}}},
			"reader": {},
		}}})
	ctx := context.Background()
	_, err := rt.Spawn(ctx, "writer", "x", host.SpawnOptions{})
	if !errors.Is(err, capability.ErrAmplify) || !strings.Contains(err.Error(), `template "writer" asks for rights its spawner`) {
		t.Fatalf("a template above its spawner: %v", err)
	}
	_, err = rt.Spawn(ctx, "nope", "x", host.SpawnOptions{})
	if err == nil || !strings.Contains(err.Error(), `no agent template "nope": the known ones are reader, writer`) {
		t.Fatalf("unknown template: %v", err)
	}
	_, err = rt.RunAgent(ctx, "x", host.AgentOptions{Persona: "ghost"})
	if !errors.Is(err, persona.ErrNotFound) || !strings.Contains(err.Error(), "there are none yet") {
		t.Fatalf("unknown persona, none saved: %v", err)
	}
	if _, err := rt.SavePersona(ctx, persona.Persona{Name: "alpha", System: "A."}); err != nil {
		t.Fatal(err)
	}
	_, err = rt.RunAgent(ctx, "x", host.AgentOptions{Persona: "ghost"})
	if !errors.Is(err, persona.ErrNotFound) || !strings.Contains(err.Error(), "the known ones are alpha") {
		t.Fatalf("unknown persona: %v", err)
	}
	_, err = rt.RunAgent(ctx, "x", host.AgentOptions{Persona: "alpha@ffffff"})
	if !errors.Is(err, persona.ErrNotFound) || !strings.Contains(err.Error(), "has no version") {
		t.Fatalf("unknown version: %v", err)
	}
	_, err = rt.Tournament(ctx, host.TournamentOptions{Persona: "ghost", Tasks: tournamentTasks})
	if !errors.Is(err, persona.ErrNotFound) {
		t.Fatalf("tournament of an unknown persona: %v", err)
	}
	if srv.Requests() != 0 {
		t.Fatalf("%d model requests", srv.Requests())
	}
}

// Personas are committed through the git actor: a second tool root on the
// same upstream finds them.
func TestPersonasAreSharedThroughGit(t *testing.T) {
	bare := upstream(t)
	rt, _ := gitRoot(t, bare)
	p, err := rt.SavePersona(context.Background(), persona.Persona{Name: "shared", System: "Shared prompt."})
	if err != nil {
		t.Fatal(err)
	}
	tree := upstreamTree(t, bare, "main")
	if !strings.Contains(tree["personas/shared.md"], "Shared prompt.") || tree["personas/versions/shared/"+p.Version+".md"] == "" {
		t.Fatalf("the upstream lacks the persona: %v", keys(tree))
	}
	other, _ := gitRoot(t, bare)
	got, err := other.Personas().Get("shared")
	if err != nil || got.Version != p.Version {
		t.Fatalf("the other root: %+v %v", got, err)
	}
}

func llmUsage(total int64) llm.Usage {
	return llm.Usage{PromptTokens: total / 2, CompletionTokens: total - total/2, TotalTokens: total}
}

func keys(m map[string]string) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A model failure leaves the tournament resumable: the failed call (its
// error recorded) is asked again on resume, the answered ones are not.
func TestTournamentResumesAfterAModelFailure(t *testing.T) {
	var mu sync.Mutex
	fail := true
	srv := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		mu.Lock()
		f := fail && r.Messages[len(r.Messages)-1].Content == "Colour of the sky?"
		if f {
			fail = false
		}
		mu.Unlock()
		if f {
			return llmtest.Step{Status: 400, Error: "the model is overloaded"}
		}
		return tournamentStep(r)
	})
	defer srv.Close()
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}})
	basePersona(t, rt)
	rep, err := rt.Tournament(context.Background(), host.TournamentOptions{Persona: "quiz", Tasks: tournamentTasks, Variants: 3})
	if !errors.Is(err, persona.ErrModel) || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("%v", err)
	}
	if meta, _ := rt.Journal().Get(rep.Run); meta.Status != journal.StatusRunning {
		t.Fatalf("after a model failure the run is %s, want running (resumable)", meta.Status)
	}
	failedAt := srv.Requests() // 3 variants + the baseline's t1, t2 answered, t3 failed
	if failedAt != 6 {
		t.Fatalf("requests before the failure: %d", failedAt)
	}
	done, err := rt.ResumeTournament(context.Background(), rep.Run)
	if err != nil || done.Winner != "v2" {
		t.Fatalf("%+v %v", done.Report, err)
	}
	if srv.Requests() != failedAt+(23-5) {
		t.Fatalf("requests after the resume: %d, want %d", srv.Requests(), failedAt+18)
	}
	// The replay now answers the once-failed call from the journal too.
	before := srv.Requests()
	if again, err := rt.ReplayTournament(context.Background(), rep.Run); err != nil || again.Table() != done.Table() || srv.Requests() != before {
		t.Fatalf("replay: %v (%d requests)", err, srv.Requests()-before)
	}
}

// runsOfTool counts the runs of tool in rt's journal.
func runsOfTool(t *testing.T, rt *host.Runtime, tool string) int {
	t.Helper()
	runs, err := rt.Journal().Runs()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		if r.Tool == tool {
			n++
		}
	}
	return n
}
