package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// The personas, a tournament and its replay, and the nursery, from the
// command line as a new user walks them.
func TestPersonaTournamentSpawnCommands(t *testing.T) {
	right := map[string]int{"Be helpful.": 1, "PROMPT-V1": 2, "PROMPT-V2": 1}
	qs := []string{"q1", "q2"}
	srv := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		sys, user := r.Messages[0].Content, r.Messages[len(r.Messages)-1].Content
		if strings.Contains(sys, "prompt engineer") {
			for i := 1; i <= 2; i++ {
				if strings.Contains(user, fmt.Sprintf("Write variant %d of 2.", i)) {
					return llmtest.Step{Content: fmt.Sprintf("PROMPT-V%d", i)}
				}
			}
		}
		for i, q := range qs {
			if user == q && i < right[sys] {
				return llmtest.Step{Content: "right"}
			}
		}
		return llmtest.Step{Content: "wrong: " + sys}
	})
	defer srv.Close()
	t.Setenv("AGENTOS_LLM_BASE_URL", srv.URL())
	t.Setenv("AGENTOS_LLM_MODEL", "scripted")
	root := toolRoot(t, nil)
	tasks := filepath.Join(t.TempDir(), "tasks.json")
	if err := os.WriteFile(tasks, []byte(`{"scorer": {"kind": "exact"}, "tasks": [{"input": "q1", "expected": "right"}, {"input": "q2", "expected": "right"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}

	if code, _, stderr := cli(t, "tournament", "--root", root, "--persona", "helper", "--tasks", tasks); code != 2 || !strings.Contains(stderr, `there is no persona "helper"`) {
		t.Fatalf("tournament of an unknown persona: %d %s", code, stderr)
	}
	if code, stdout, stderr := cli(t, "persona", "--root", root, "set", "helper", "--text", "Be helpful.", "--description", "helps"); code != 0 || !strings.Contains(stdout, "persona helper is now version") {
		t.Fatalf("persona set: %d %s %s", code, stdout, stderr)
	}
	code, stdout, stderr := cli(t, "tournament", "--root", root, "--json", "--persona", "helper", "--tasks", tasks, "--variants", "2")
	if code != 0 {
		t.Fatalf("tournament: %d %s %s", code, stdout, stderr)
	}
	var rep struct {
		Run    string `json:"run"`
		Winner string `json:"winner"`
		Saved  *struct {
			Version string `json:"version"`
		} `json:"saved"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Winner != "v1" || rep.Saved == nil {
		t.Fatalf("tournament report: %v\n%s", err, stdout)
	}
	requests := srv.Requests()
	if requests != 2+3*2 {
		t.Fatalf("%d model requests", requests)
	}
	code, stdout, _ = cli(t, "tournament", "--root", root, "--replay", rep.Run)
	if code != 0 || !strings.Contains(stdout, "every answer from the journal") || !strings.Contains(stdout, "<- winner") || srv.Requests() != requests {
		t.Fatalf("replay: %d (%d new requests)\n%s", code, srv.Requests()-requests, stdout)
	}
	if code, _, stderr := cli(t, "replay", "--root", root, rep.Run); code != 2 || !strings.Contains(stderr, "agentos tournament --replay "+rep.Run) {
		t.Fatalf("agentos replay of a tournament: %d %s", code, stderr)
	}
	code, stdout, _ = cli(t, "persona", "--root", root, "versions", "helper")
	if code != 0 || !strings.Contains(stdout, rep.Saved.Version) || !strings.Contains(stdout, "tournament "+rep.Run) || !strings.Contains(stdout, "(current)") {
		t.Fatalf("persona versions: %d\n%s", code, stdout)
	}
	code, stdout, _ = cli(t, "persona", "--root", root, "show", "helper")
	if code != 0 || !strings.Contains(stdout, "PROMPT-V1") {
		t.Fatalf("persona show: %d\n%s", code, stdout)
	}

	// The nursery: a template from agentos.json, its persona reaching the model.
	cfg := filepath.Join(root, "agentos.json")
	b, _ := os.ReadFile(cfg)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["agents"] = map[string]any{"templates": map[string]any{"asker": map[string]any{"persona": "helper", "grants": []any{map[string]any{"right": "llm"}}, "max_steps": 2}}}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = cli(t, "spawn", "--root", root, "--list")
	if code != 0 || !strings.Contains(stdout, "asker") {
		t.Fatalf("spawn --list: %d\n%s", code, stdout)
	}
	code, stdout, stderr = cli(t, "spawn", "--root", root, "asker", "hello")
	if code != 0 || !strings.Contains(stdout, "wrong: PROMPT-V1") {
		t.Fatalf("spawn: %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, "spawn", "--root", root, "nobody", "hello"); code != 2 || !strings.Contains(stderr, "the known ones are asker") {
		t.Fatalf("spawn of an unknown template: %d %s", code, stderr)
	}
	if code, _, stderr := cli(t, "agent", "--root", root, "--persona", "ghost", "hello"); code != 2 || !strings.Contains(stderr, "the known ones are helper") {
		t.Fatalf("agent with an unknown persona: %d %s", code, stderr)
	}
}
