package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/samples"
)

// forgeRun forges fib with a scripted model that fails once then passes,
// stops the model, and returns the root and the forge's run id.
func forgeRun(t *testing.T) (root, id string) {
	t.Helper()
	srv := withModel(t, submitStep(fibArgs(samples.FibForgedBuggy, samples.FibForgedTests)), submitStep(fibArgs(samples.FibForged, samples.FibForgedTests)))
	root = toolRoot(t, nil)
	code, stdout, stderr := cli(t, "forge", "--root", root, "--json", "a tool that returns the n-th Fibonacci number")
	var res struct {
		RunID string `json:"run_id"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.RunID == "" {
		t.Fatalf("forge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := srv.Requests(); n != 2 {
		t.Fatalf("the forge made %d model requests, want 2", n)
	}
	srv.Close() // the replay is offline: any request would fail
	return root, res.RunID
}

type forgeReplayOut struct {
	Same       bool `json:"same"`
	Divergence *struct {
		Code string `json:"code"`
		Seq  uint64 `json:"seq"`
	} `json:"divergence"`
	Result struct {
		Path     string `json:"path"`
		Attempts []struct {
			Passed bool `json:"passed"`
		} `json:"attempts"`
	} `json:"result"`
	Recorded struct {
		Path   string `json:"path"`
		Commit string `json:"commit"`
	} `json:"recorded"`
}

// issue 25 item 8: a forge run replays offline, with zero model requests
// and zero test runs, and says it followed its recording.
func TestReplayForgeOffline(t *testing.T) {
	root, id := forgeRun(t)
	before, _ := os.ReadDir(filepath.Join(root, "tools", "math"))
	code, stdout, stderr := cli(t, "replay", "--root", root, "--json", id)
	var out forgeReplayOut
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("replay: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	if !out.Same || out.Divergence != nil || out.Result.Path != "tools/math/fib.ts" || len(out.Result.Attempts) != 2 || out.Result.Attempts[0].Passed || !out.Result.Attempts[1].Passed || out.Recorded.Commit == "" {
		t.Fatalf("replay report: %s", stdout)
	}
	after, _ := os.ReadDir(filepath.Join(root, "tools", "math"))
	if len(after) != len(before) {
		t.Fatalf("the replay wrote in the tool root: %v then %v", before, after)
	}
	code, stdout, stderr = cli(t, "replay", "--root", root, id)
	if code != 0 || !strings.Contains(stdout, "forge run "+id) || !strings.Contains(stdout, "same result as recorded") || !strings.Contains(stdout, "attempt 1 failed") {
		t.Fatalf("replay (text): exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// A replay under other settings than the run's reports where it left the
// recording: one attempt where the run made two ends before the second
// model request ([AGENTOS-J003] at #5: lessons 1, llm 2, taken 3, tests 4).
func TestReplayForgeFewerAttemptsDiverges(t *testing.T) {
	root, id := forgeRun(t)
	code, stdout, stderr := cli(t, "replay", "--root", root, "--json", "--attempts", "1", id)
	var out forgeReplayOut
	if code != 1 || json.Unmarshal([]byte(stdout), &out) != nil || out.Same || out.Divergence == nil || out.Divergence.Code != "AGENTOS-J003" || out.Divergence.Seq != 5 {
		t.Fatalf("replay --attempts 1: exit %d, want 1 and AGENTOS-J003 at #5\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, "replay", "--root", root, "--tool", "x.ts", id); code != 2 || !strings.Contains(stderr, "forge") {
		t.Fatalf("replay --tool of a forge: exit %d, want 2\n%s", code, stderr)
	}
}

// A forge replays against today's checker: allowed_imports narrowed since
// the run makes check_tool refuse the candidate it passed (it imports
// "pad"), so the loop skips the test run the recording made next and asks
// the model instead ([AGENTOS-J001] at #4: the recorded forge.run, the
// replay's llm.complete carrying check_tool's refusal).
func TestReplayForgePatchedCheckerDiverges(t *testing.T) {
	withVendor := fibArgs("import pad from \"pad\";\n"+samples.FibForged, samples.FibForgedTests)
	srv := withModel(t, submitStep(withVendor))
	root := toolRoot(t, nil)
	setAllowedImports(t, root, []string{"pad"})
	code, stdout, stderr := cli(t, "forge", "--root", root, "--json", "a tool that returns the n-th Fibonacci number")
	var res struct {
		RunID    string `json:"run_id"`
		Attempts []struct {
			Errors []string `json:"errors"`
		} `json:"attempts"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Attempts) != 1 {
		t.Fatalf("forge: exit %d, want 1 attempt, passed\n%s\n%s", code, stdout, stderr)
	}
	srv.Close()
	if code, stdout, stderr := cli(t, "replay", "--root", root, "--json", res.RunID); code != 0 {
		t.Fatalf("replay under the run's checker: exit %d\n%s\n%s", code, stdout, stderr)
	}
	setAllowedImports(t, root, nil)
	code, stdout, stderr = cli(t, "replay", "--root", root, "--json", res.RunID)
	var out forgeReplayOut
	if code != 1 || json.Unmarshal([]byte(stdout), &out) != nil || out.Same || out.Divergence == nil || out.Divergence.Code != "AGENTOS-J001" || out.Divergence.Seq != 4 {
		t.Fatalf("replay under a narrower checker: exit %d, want 1 and AGENTOS-J001 at #4\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "replay", "--root", root, res.RunID)
	if code != 1 || !strings.Contains(stdout, "DIVERGED [AGENTOS-J001]") || !strings.Contains(stdout, "check_tool") {
		t.Fatalf("replay (text) under a narrower checker: exit %d\n%s", code, stdout)
	}
}

// setAllowedImports rewrites the root's allowed_imports.
func setAllowedImports(t *testing.T, root string, mods []string) {
	t.Helper()
	if mods == nil {
		mods = []string{}
	}
	setConfig(t, root, "allowed_imports", mods)
}

// setConfig sets key to value at the top of root's agentos.json.
func setConfig(t *testing.T, root, key string, value any) {
	t.Helper()
	p := filepath.Join(root, "agentos.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg[key] = value
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A forge whose model was busy once (503, asked again) replays alike: the
// recorded error is answered from the journal and asked again.
func TestReplayForgeRetriedModelError(t *testing.T) {
	srv := withModel(t, llmtest.Step{Status: http.StatusServiceUnavailable, Error: "overloaded"}, submitStep(fibArgs(samples.FibForged, samples.FibForgedTests)))
	root := toolRoot(t, nil)
	code, stdout, stderr := cli(t, "forge", "--root", root, "--json", "a tool that returns the n-th Fibonacci number")
	var res struct {
		RunID string `json:"run_id"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || srv.Requests() != 2 {
		t.Fatalf("forge: exit %d, %d requests\n%s\n%s", code, srv.Requests(), stdout, stderr)
	}
	srv.Close()
	if code, stdout, stderr := cli(t, "replay", "--root", root, res.RunID); code != 0 || !strings.Contains(stdout, "same result as recorded") {
		t.Fatalf("replay: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
