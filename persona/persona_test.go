package persona

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/vfs"
)

func TestParseFormatRoundTrip(t *testing.T) {
	p := Persona{Name: "a-1", Description: "says  hi\nloudly", System: "  Hello.\n", NoProtocol: true, Parent: "abc", Origin: "set", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	got, err := Parse("a-1.md", Format(p))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a-1" || got.Description != "says hi loudly" || got.System != "Hello." || !got.NoProtocol || got.Parent != "abc" || got.Version != Version("Hello.") || !got.Created.Equal(p.Created) {
		t.Fatalf("%+v", got)
	}
	// A file without a front matter is a prompt alone; a hand-edited
	// version line is ignored.
	if got, err := Parse("x.md", []byte("Just this.\n")); err != nil || got.System != "Just this." {
		t.Fatalf("%+v %v", got, err)
	}
	if got, _ := Parse("x.md", []byte("---\nversion: 000000000000\n---\nText")); got.Version != Version("Text") {
		t.Fatalf("version %s", got.Version)
	}
	for _, bad := range []string{"---\nname: x\nText", "---\ncolour: red\n---\nText", "---\nprotocol: maybe\n---\nT", "---\nname: x\n---\n   "} {
		if _, err := Parse("bad.md", []byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if CheckName("Bad Name") == nil || CheckName("ok_name-2") != nil {
		t.Fatal("CheckName")
	}
}

func store(t *testing.T) *Store {
	t.Helper()
	j, err := vfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	return &Store{FS: j, Write: func(_ context.Context, p string, b []byte) error { return j.WriteFile(p, b) }, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}}
}

func TestStoreVersionsAndRollback(t *testing.T) {
	s, ctx := store(t), context.Background()
	if ps, err := s.List(); err != nil || len(ps) != 0 {
		t.Fatalf("empty store: %v %v", ps, err)
	}
	v1, err := s.Save(ctx, Persona{Name: "p", System: "one"})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := s.Save(ctx, Persona{Name: "p", System: "one"})
	if !again.Created.Equal(v1.Created) {
		t.Fatal("saving the same text made a new version")
	}
	v2, _ := s.Save(ctx, Persona{Name: "p", System: "two", Parent: v1.Version})
	if cur, _ := s.Get("p"); cur.Version != v2.Version {
		t.Fatalf("current %s", cur.Version)
	}
	vs, err := s.Versions("p")
	if err != nil || len(vs) != 2 || vs[0].Version != v1.Version || vs[1].Parent != v1.Version {
		t.Fatalf("%+v %v", vs, err)
	}
	if old, err := s.Get("p@" + v1.Version[:4]); err != nil || old.System != "one" {
		t.Fatalf("%+v %v", old, err)
	}
	if _, err := s.Use(ctx, "p@"+v1.Version); err != nil {
		t.Fatal(err)
	}
	if cur, _ := s.Get("p"); cur.System != "one" {
		t.Fatalf("rollback: %+v", cur)
	}
	if _, err := s.Get("q"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "the known ones are p") {
		t.Fatal(err)
	}
	if _, err := s.Get("p@zzzz"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), v2.Version) {
		t.Fatal(err)
	}
	if _, err := (&Store{FS: s.FS}).Save(ctx, Persona{Name: "r", System: "x"}); err == nil {
		t.Fatal("a read-only store saved")
	}
}

func TestScorersAndTaskSets(t *testing.T) {
	ts, err := ParseTasks("t.json", []byte(`{"scorer":{"kind":"exact","ignore_case":true},"tasks":[
		{"input":"a","expected":"Yes"},
		{"input":"b","expected":"cat","scorer":{"kind":"contains"}},
		{"input":"c","expected":"^\\d+$","scorer":{"kind":"regex"}},
		{"input":"d","expected":"x","scorer":{"kind":"tool","tool":"tools/s.ts"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tool := func(_ context.Context, path string, args json.RawMessage) (json.RawMessage, error) {
		if path != "tools/s.ts" || !strings.Contains(string(args), `"answer":"x!"`) {
			return nil, fmt.Errorf("args %s", args)
		}
		return json.RawMessage(`{"score":0.5}`), nil
	}
	for i, c := range []struct {
		answer string
		want   float64
	}{{" yes ", 1}, {"a Cat", 0}, {"42", 1}, {"x!", 0.5}} {
		if got, err := ts.score(context.Background(), i, c.answer, tool); err != nil || got != c.want {
			t.Errorf("task %d %q: %v %v", i, c.answer, got, err)
		}
	}
	for _, bad := range []string{`{"tasks":[]}`, `{"scorer":{"kind":"fuzzy"},"tasks":[{"input":"a","expected":"b"}]}`, `{"scorer":{"kind":"regex"},"tasks":[{"input":"a","expected":"("}]}`, `{"scorer":{"kind":"exact"},"tasks":[{"input":"a","expected":"b","extra":1}]}`, `{"scorer":{"kind":"tool"},"tasks":[{"input":"a","expected":"b"}]}`} {
		if _, err := ParseTasks("t.json", []byte(bad)); !errors.Is(err, ErrInvalidTasks) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := toolScore("s", json.RawMessage(`{"result": 2}`)); err == nil {
		t.Error("a score above 1 was accepted")
	}
}

// fakeModel answers like the scripted server, in process: the variant
// writing with "V<i>", a task right when the prompt's rank covers it.
func fakeModel(right map[string]int, calls *[]uint64) driver.Host {
	return driver.HostFunc(func(_ context.Context, c driver.Call) (json.RawMessage, error) {
		*calls = append(*calls, c.Seq)
		var req llm.Request
		_ = json.Unmarshal(c.Request, &req)
		sys, user := req.Messages[0].Content, req.Messages[1].Content
		text := "wrong"
		if strings.Contains(sys, "prompt engineer") {
			var i, n int
			_, _ = fmt.Sscanf(user[strings.LastIndex(user, "Write variant"):], "Write variant %d of %d.", &i, &n)
			text = fmt.Sprintf("V%d", i)
		} else if user < fmt.Sprint(right[sys]) {
			text = "ok"
		}
		return json.Marshal(llm.Response{Message: llm.Message{Role: "assistant", Content: text}, Usage: llm.Usage{TotalTokens: 10}})
	})
}

func TestTournamentRanksAndKeepsTheBaselineWithinTheMargin(t *testing.T) {
	ts := TaskSet{Scorer: Scorer{Kind: ScoreExact}, Tasks: []Task{{Input: "0", Expected: "ok"}, {Input: "1", Expected: "ok"}, {Input: "2", Expected: "ok"}}}
	var calls []uint64
	host := fakeModel(map[string]int{"base": 1, "V1": 3, "V2": 2}, &calls)
	rep, err := Tournament(context.Background(), Options{LLM: host, Base: Persona{Name: "b", System: "base"}, Tasks: ts, Variants: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Winner != "v1" || !rep.Improved || rep.Ranked[0].Score != 3 || rep.Ranked[2].Label != "baseline" {
		t.Fatalf("%+v\n%s", rep, rep.Table())
	}
	// Every seq once, in the documented layout.
	want := []uint64{1, 2}
	for c := range 3 {
		for tk := range 3 {
			want = append(want, Seq(2, 3, c, tk))
		}
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("seqs %v, want %v", calls, want)
	}
	// A margin larger than the gain keeps the baseline.
	calls = nil
	rep, err = Tournament(context.Background(), Options{LLM: host, Base: Persona{Name: "b", System: "base"}, Tasks: ts, Variants: 2, Margin: 5000})
	if err != nil || rep.Winner != "baseline" || rep.Improved {
		t.Fatalf("%+v %v", rep, err)
	}
	// Recorded wall times replace the measured ones.
	rep, _ = Tournament(context.Background(), Options{LLM: host, Base: Persona{Name: "b", System: "base"}, Tasks: ts, Variants: 2, Walls: func() (map[uint64]time.Duration, error) {
		return map[uint64]time.Duration{Seq(2, 3, 0, 0): time.Hour}, nil
	}})
	for _, c := range rep.Ranked {
		if c.Label == "baseline" && c.Wall < time.Hour {
			t.Fatalf("baseline wall %s", c.Wall)
		}
	}
	if _, err := Tournament(context.Background(), Options{LLM: host, Base: Persona{Name: "b", System: "base"}, Tasks: ts, Variants: 0}); err == nil {
		t.Fatal("0 variants")
	}
}

// Tool scores go through Options.Journal at the seqs of ScoreSeq; a tool
// that fails is an answer ({"error"}: the task scores 0 with its error),
// not an error of the tournament; a journal that fails the call ends it.
func TestTournamentJournalsToolScores(t *testing.T) {
	ts := TaskSet{Scorer: Scorer{Kind: ScoreTool, Tool: "tools/s.ts"}, Tasks: []Task{{Input: "0", Expected: "ok"}, {Input: "1", Expected: "ok"}}}
	var calls []uint64
	host := fakeModel(map[string]int{"base": 1, "V1": 2}, &calls)
	var journaled []driver.Call
	var answers []string
	journal := func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			out, err := next.Do(ctx, c)
			journaled = append(journaled, c)
			answers = append(answers, string(out))
			return out, err
		})
	}
	tool := func(_ context.Context, _ string, args json.RawMessage) (json.RawMessage, error) {
		var a struct{ Input, Answer string }
		_ = json.Unmarshal(args, &a)
		if a.Input == "1" {
			return nil, errors.New("the judge crashed")
		}
		return json.RawMessage(`1`), nil
	}
	rep, err := Tournament(context.Background(), Options{LLM: host, Journal: journal, ScoreTool: tool, Base: Persona{Name: "b", System: "base"}, Tasks: ts, Variants: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for c := range 2 {
		for tk := range 2 {
			want = append(want, ScoreSeq(1, 2, c, tk))
		}
	}
	var got []uint64
	for _, c := range journaled {
		if c.Driver != ScoreDriver || c.Op != OpScoreTool {
			t.Fatalf("journaled %s.%s", c.Driver, c.Op)
		}
		got = append(got, c.Seq)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || want[0] != 6 {
		t.Fatalf("score seqs %v, want %v (after the 5 model calls)", got, want)
	}
	if answers[1] != `{"error":"the judge crashed"}` || rep.Ranked[0].Results[1].Score != 0 || !strings.Contains(rep.Ranked[0].Results[1].Error, "the judge crashed") {
		t.Fatalf("answers %v\n%+v", answers, rep.Ranked[0].Results)
	}
	// A journal that cannot answer (a replay missing the score) ends it.
	broken := func(driver.Host) driver.Host {
		return driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) {
			return nil, errors.New("not in the recording")
		})
	}
	if _, err := Tournament(context.Background(), Options{LLM: host, Journal: broken, ScoreTool: tool, Base: Persona{Name: "b", System: "base"}, Tasks: ts, Variants: 1}); err == nil || !strings.Contains(err.Error(), "not in the recording") {
		t.Fatalf("%v", err)
	}
}
