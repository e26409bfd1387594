package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/transpile"
)

// The gate tests' tool is scenario.GateTool (gateTool), whose bug skips
// the first line of its file.
const (
	// The fix reads the same file and counts the first line too.
	gateBugSearch = "for (let i = 1; i < lines.length; i++)"
	gateBugFix    = "for (let i = 0; i < lines.length; i++)"
	// A version that reads another file than the one the runs read.
	gateOtherSearch = "await tgp.read_file(args.file)"
	gateOtherFix    = "await tgp.read_file(args.file + \".bak\")"
)

// gateFiles are the data the 5 recorded runs read; the last one starts
// with 0, so the fix does not change its result.
var gateFiles = map[string]string{
	"tools/data/a.txt": "1\n2\n3\n",
	"tools/data/b.txt": "10\n20\n",
	"tools/data/c.txt": "5\n5\n5\n5\n",
	"tools/data/d.txt": "7\n",
	"tools/data/e.txt": "0\n4\n4\n",
}

// gateRoot starts a runtime on a tool root sharing a fresh bare upstream,
// with the gate under policy, writes the buggy tool and records its 5
// runs; then it removes the data files, so that a replay that did live
// I/O could not give the recorded answers.
func gateRoot(t *testing.T, policy string, tweak ...func(*host.Config)) (rt *host.Runtime, dir, bare string, runs []string) {
	t.Helper()
	bare = upstream(t)
	rt, dir = gitRoot(t, bare, append([]func(*host.Config){func(c *host.Config) { c.Governance.Gate.Policy = policy }}, tweak...)...)
	write(t, rt, gateTool, gateBuggy)
	for p, body := range gateFiles {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"tools/data/a.txt", "tools/data/b.txt", "tools/data/c.txt", "tools/data/d.txt", "tools/data/e.txt"} {
		args, _ := json.Marshal(map[string]any{"path": gateTool, "args": map[string]string{"file": p}})
		out, err := rt.Call(context.Background(), "exec_tool", args)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Success bool   `json:"success"`
			RunID   string `json:"run_id"`
		}
		if err := json.Unmarshal(out, &res); err != nil || !res.Success {
			t.Fatalf("exec_tool %s: %s (%v)", p, out, err)
		}
		runs = append(runs, res.RunID)
	}
	if err := os.RemoveAll(filepath.Join(dir, "tools", "data")); err != nil {
		t.Fatal(err)
	}
	return rt, dir, bare, runs
}

// writtenGate is the gate report of a write_file or patch_file reply.
func writtenGate(t *testing.T, out json.RawMessage) *gate.Report {
	t.Helper()
	var w struct {
		Gate *gate.Report `json:"gate"`
	}
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return w.Gate
}

// Warn (the default): the fix is patched in, lands (committed, registered)
// and its reply reports the 4 runs whose result changed, old and new, and
// the one whose result did not; every replay answered from the journal
// (the data files are gone).
func TestGateWarnReportsChangedResults(t *testing.T) {
	rt, dir, bare, runs := gateRoot(t, "")
	before := len(history(t, bare))
	args, _ := json.Marshal(map[string]string{"path": gateTool, "search": gateBugSearch, "replace": gateBugFix})
	out, err := rt.Call(context.Background(), "patch_file", args)
	if err != nil {
		t.Fatal(err)
	}
	rep := writtenGate(t, out)
	if rep == nil {
		t.Fatalf("the patch_file reply has no gate report: %s", out)
	}
	if rep.Policy != gate.PolicyWarn || rep.Blocked || rep.OldHash != transpile.Hash([]byte(gateBuggy)) || rep.Found != 5 || len(rep.Runs) != 5 {
		t.Fatalf("report: %+v", rep)
	}
	if rep.Same != 1 || rep.Different != 4 || rep.Divergence != 0 || rep.Errors != 0 {
		t.Fatalf("outcomes: %+v", rep.Runs)
	}
	want := map[string][2]string{runs[0]: {"5", "6"}, runs[1]: {"20", "30"}, runs[2]: {"15", "20"}, runs[3]: {"0", "7"}, runs[4]: {"8", "8"}}
	for i, r := range rep.Runs {
		w, ok := want[r.Run]
		if !ok || r.Old != w[0] || r.New != w[1] {
			t.Errorf("run %s: old %q new %q, want %q", r.Run, r.Old, r.New, w)
		}
		if (r.Outcome == gate.OutcomeSame) != (w[0] == w[1]) {
			t.Errorf("run %s: outcome %s", r.Run, r.Outcome)
		}
		if i > 0 && r.Started.After(rep.Runs[i-1].Started) {
			t.Errorf("runs not newest first: %v", rep.Runs)
		}
	}
	// It landed: on disk, upstream, registered.
	disk, _ := os.ReadFile(filepath.Join(dir, gateTool))
	if !strings.Contains(string(disk), gateBugFix) || !strings.Contains(upstreamTree(t, bare, "main")[gateTool], gateBugFix) || len(history(t, bare)) != before+1 {
		t.Fatal("the warned write did not land")
	}
	if tool, _ := rt.Registry().Get(gateTool); tool.Hash != transpile.Hash(disk) {
		t.Fatalf("registry hash %s, want the fix's", tool.Hash)
	}
	// The replays were not runs: the journal holds the 5 recorded ones.
	all, _ := rt.Journal().Runs()
	if len(all) != 5 {
		t.Fatalf("the journal has %d runs after the gate, want the 5 recorded", len(all))
	}
}

// A version that reads another file diverges at that call, with its code.
func TestGateReportsDivergence(t *testing.T) {
	rt, _, _, _ := gateRoot(t, "warn")
	args, _ := json.Marshal(map[string]string{"path": gateTool, "search": gateOtherSearch, "replace": gateOtherFix})
	out, err := rt.Call(context.Background(), "patch_file", args)
	if err != nil {
		t.Fatal(err)
	}
	rep := writtenGate(t, out)
	if rep == nil || rep.Divergence != 5 {
		t.Fatalf("report: %s", out)
	}
	for _, r := range rep.Runs {
		if r.Outcome != gate.OutcomeDivergence || r.Code != "AGENTOS-J001" || r.Seq == 0 || !strings.Contains(r.Detail, ".bak") {
			t.Errorf("run %s: %+v", r.Run, r)
		}
	}
}

// Block: the fix is refused with an error naming the runs; nothing is
// written, committed or registered.
func TestGateBlockRefusesTheWrite(t *testing.T) {
	rt, dir, bare, runs := gateRoot(t, "block")
	headBefore := history(t, bare)
	regBefore, _ := rt.Registry().Get(gateTool)
	fixed := strings.Replace(gateBuggy, gateBugSearch, gateBugFix, 1)
	args, _ := json.Marshal(map[string]string{"path": gateTool, "content": fixed})
	_, err := rt.Call(context.Background(), "write_file", args)
	if err == nil {
		t.Fatal("a blocked write succeeded")
	}
	if !errors.Is(err, gate.ErrBlocked) {
		t.Errorf("error %v does not wrap gate.ErrBlocked", err)
	}
	for _, id := range runs[:4] {
		if !strings.Contains(err.Error(), id+" (different: ") {
			t.Errorf("the error does not name run %s: %v", id, err)
		}
	}
	if strings.Contains(err.Error(), runs[4]) {
		t.Errorf("the error names the unchanged run %s: %v", runs[4], err)
	}
	// The error goes to the caller, often an agent: it says what a human
	// operator can do, and does not invite the caller to weaken the policy.
	if !strings.Contains(err.Error(), "agentos check --against-runs "+gateTool) || !strings.Contains(err.Error(), "human operator") ||
		strings.Contains(err.Error(), `"warn"`) || strings.Contains(err.Error(), "governance.gate.policy") {
		t.Errorf("the error does not point to the operator, or invites weakening the policy: %v", err)
	}
	disk, _ := os.ReadFile(filepath.Join(dir, gateTool))
	if string(disk) != gateBuggy {
		t.Fatalf("the blocked write reached the working tree: %s", disk)
	}
	if got := history(t, bare); len(got) != len(headBefore) || upstreamTree(t, bare, "main")[gateTool] != gateBuggy {
		t.Fatalf("the blocked write was committed: %v", got)
	}
	if reg, _ := rt.Registry().Get(gateTool); reg.Hash != regBefore.Hash || reg.Version != regBefore.Version {
		t.Fatalf("the blocked write was registered: %+v", reg)
	}
	// A change that keeps every result passes the block gate.
	same := strings.Replace(gateBuggy, "Sums the numbers", "Adds up the numbers", 1)
	args, _ = json.Marshal(map[string]string{"path": gateTool, "content": same})
	out, err := rt.Call(context.Background(), "write_file", args)
	if err != nil {
		t.Fatalf("a change that keeps every result was refused: %v", err)
	}
	if rep := writtenGate(t, out); rep == nil || rep.Same != 5 || rep.Blocked {
		t.Fatalf("report: %s", out)
	}
}

// No recorded run of the previous version: the write lands and the report
// says there was nothing to replay. A new tool has no report at all.
func TestGateNoPreviousRuns(t *testing.T) {
	bare := upstream(t)
	rt, _ := gitRoot(t, bare, func(c *host.Config) { c.Governance.Gate.Policy = "block" })
	out := write(t, rt, gateTool, gateBuggy)
	if rep := writtenGate(t, out); rep != nil {
		t.Fatalf("a new tool has a gate report: %s", out)
	}
	out = write(t, rt, gateTool, strings.Replace(gateBuggy, gateBugSearch, gateBugFix, 1))
	rep := writtenGate(t, out)
	if rep == nil || len(rep.Runs) != 0 || rep.Blocked || !strings.Contains(rep.Note, "no recorded run") {
		t.Fatalf("report: %s", out)
	}
	if !strings.Contains(upstreamTree(t, bare, "main")[gateTool], gateBugFix) {
		t.Fatal("the write did not land")
	}
}

// governance.gate.runs bounds the replays; 0 disables the gate.
func TestGateRunsConfig(t *testing.T) {
	rt, dir, _, runs := gateRoot(t, "block")
	fixed := []byte(strings.Replace(gateBuggy, gateBugSearch, gateBugFix, 1))
	rep, err := rt.CheckAgainstRuns(context.Background(), gateTool, fixed, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Run != runs[4] || rep.Runs[1].Run != runs[3] || !rep.Blocked {
		t.Fatalf("report: %+v", rep)
	}
	// CheckAgainstRuns wrote nothing.
	if disk, _ := os.ReadFile(filepath.Join(dir, gateTool)); string(disk) != gateBuggy {
		t.Fatal("CheckAgainstRuns wrote the file")
	}
	zero := 0
	bare := upstream(t)
	off, _ := gitRoot(t, bare, func(c *host.Config) { c.Governance.Gate.Runs = &zero; c.Governance.Gate.Policy = "block" })
	write(t, off, gateTool, gateBuggy)
	if n := off.Node().Gate(); n != nil {
		t.Fatal("runs 0 left a gate")
	}
}

// A replay is bounded: a new version that loops forever is stopped at the
// gate's timeout and reported as an error (not a divergence). Under block
// such a write is refused by default (block_on_error defaults to true with
// policy block); block_on_error false lets it land with the report.
func TestGateBoundsReplays(t *testing.T) {
	loop, _ := json.Marshal(map[string]string{"path": gateTool, "search": "let total = 0;", "replace": "let total = 0;\n  while (lines.length > 0) { total++; }"})
	bounded := func(c *host.Config) {
		c.Governance.Gate.Timeout = host.Duration(300 * time.Millisecond)
		c.Governance.Gate.Runs = new(int)
		*c.Governance.Gate.Runs = 2
	}
	rt, dir, _, _ := gateRoot(t, "block", bounded)
	_, err := rt.Call(context.Background(), "patch_file", loop)
	if !errors.Is(err, gate.ErrBlocked) || strings.Count(err.Error(), "(error: the replay stopped at its limit (timeout 300ms)") != 2 {
		t.Fatalf("a looping version under block (block_on_error unset): %v", err)
	}
	if disk, _ := os.ReadFile(filepath.Join(dir, gateTool)); string(disk) != gateBuggy {
		t.Fatal("the refused patch reached the working tree")
	}

	rt, dir, _, _ = gateRoot(t, "block", bounded, func(c *host.Config) { c.Governance.Gate.BlockOnError = new(bool) })
	out, err := rt.Call(context.Background(), "patch_file", loop)
	if err != nil {
		t.Fatalf("a looping version under block with block_on_error false: %v", err)
	}
	if rep := writtenGate(t, out); rep == nil || rep.Errors != 2 || rep.Blocked {
		t.Fatalf("report: %s", out)
	}
	if disk, _ := os.ReadFile(filepath.Join(dir, gateTool)); !strings.Contains(string(disk), "while (lines.length > 0)") {
		t.Fatal("the patch allowed by block_on_error false did not land")
	}
}

// Under block, a change cannot be split in two writes to escape the gate:
// a comment-only version (its predecessor's runs replay the same, it
// lands, and never runs) and then the real change, which finds no run of
// the comment-only version and is gated against the runs of the newest
// earlier version that has some. The same after a version that does not
// compile (held locally, never gated, never run).
func TestGateBlockTwoStepWrite(t *testing.T) {
	rt, dir, _, runs := gateRoot(t, "block")
	comment := strings.Replace(gateBuggy, "Sums the numbers", "Adds up the numbers", 1)
	out := write(t, rt, gateTool, comment)
	if rep := writtenGate(t, out); rep == nil || rep.Same != 5 || rep.Blocked || rep.ReplacedHash != "" {
		t.Fatalf("the comment-only write: %s", out)
	}
	fixed := strings.Replace(comment, gateBugSearch, gateBugFix, 1)
	refused := func(step string) {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"path": gateTool, "content": fixed})
		_, err := rt.Call(context.Background(), "write_file", args)
		if !errors.Is(err, gate.ErrBlocked) {
			t.Fatalf("%s: the behaviour-changing write was not refused: %v", step, err)
		}
		for _, id := range runs[:4] {
			if !strings.Contains(err.Error(), id+" (different: ") {
				t.Errorf("%s: the error does not name run %s: %v", step, id, err)
			}
		}
		if !strings.Contains(err.Error(), "version "+transpile.Hash([]byte(gateBuggy))[:12]+" (the version being replaced") {
			t.Errorf("%s: the error does not say which version's runs were replayed: %v", step, err)
		}
		if disk, _ := os.ReadFile(filepath.Join(dir, gateTool)); string(disk) == fixed {
			t.Fatalf("%s: the refused write reached the working tree", step)
		}
	}
	refused("after a comment-only version")
	// What a write of it would be gated with says the same, in the report.
	rep, err := rt.CheckAgainstRuns(context.Background(), gateTool, []byte(fixed), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Blocked || rep.Different != 4 || rep.OldHash != transpile.Hash([]byte(gateBuggy)) ||
		rep.ReplacedHash != transpile.Hash([]byte(comment)) || !strings.Contains(rep.Previous, "no recorded run") {
		t.Fatalf("CheckAgainstRuns after a comment-only version: %+v", rep)
	}

	// A version that does not compile is held locally, not gated.
	args, _ := json.Marshal(map[string]string{"path": gateTool, "content": comment + "\nexport const = ;\n"})
	if _, err := rt.Call(context.Background(), "write_file", args); err == nil || errors.Is(err, gate.ErrBlocked) {
		t.Fatalf("a version that does not compile: %v", err)
	}
	refused("after a version that does not compile")
}

// governance.gate is checked when agentos.json is loaded.
func TestGateConfig(t *testing.T) {
	for body, want := range map[string]string{
		`{"governance": {"gate": {"policy": "blok"}}}`:                                                      `governance.gate.policy "blok" is not known`,
		`{"governance": {"gate": {"runs": -1}}}`:                                                            "governance.gate.runs -1 must be 0",
		`{"governance": {"gate": {"timeout": "-1s"}}}`:                                                      "governance.gate.timeout",
		`{"governance": {"gate": {"polcy": "block"}}}`:                                                      `did you mean "policy"?`,
		`{"governance": {"gate": {"runs": 3, "policy": "block", "block_on_error": true, "timeout": "2s"}}}`: "",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, host.ConfigFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := host.LoadConfig(dir)
		if want == "" {
			o := cfg.Governance.Gate.Options()
			if err != nil || o.Runs != 3 || o.Policy != gate.PolicyBlock || !o.BlocksOnError() || o.Timeout != 2*time.Second {
				t.Errorf("%s: %+v %v", body, o, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	// block_on_error: true by default under block, settable false; never
	// under warn.
	for body, want := range map[string]bool{
		`{"governance": {"gate": {"policy": "block"}}}`:                          true,
		`{"governance": {"gate": {"policy": "block", "block_on_error": false}}}`: false,
		`{"governance": {"gate": {"policy": "warn", "block_on_error": true}}}`:   false,
		`{"governance": {"gate": {}}}`:                                           false,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, host.ConfigFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := host.LoadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Governance.Gate.Options().BlocksOnError(); got != want {
			t.Errorf("%s: blocks on error %v, want %v", body, got, want)
		}
	}
	zero := 0
	if (host.GateConfig{Runs: &zero}).Options().Enabled() {
		t.Error("runs 0 does not disable the gate")
	}
	if o := (host.GateConfig{}).Options(); !o.Enabled() || o.Runs != 0 {
		t.Errorf("the zero GateConfig: %+v", o)
	}
}

// The gate's replays run in sandbox worker processes like any run when the
// root isolates tools in processes.
func TestGateInWorkers(t *testing.T) {
	rt, _, _, _ := gateRoot(t, "warn", func(c *host.Config) { c.Isolation = "process" })
	args, _ := json.Marshal(map[string]string{"path": gateTool, "search": gateBugSearch, "replace": gateBugFix})
	out, err := rt.Call(context.Background(), "patch_file", args)
	if err != nil {
		t.Fatal(err)
	}
	if rep := writtenGate(t, out); rep == nil || rep.Different != 4 || rep.Same != 1 {
		t.Fatalf("report: %s", out)
	}
	args, _ = json.Marshal(map[string]string{"path": gateTool, "search": gateOtherSearch, "replace": gateOtherFix})
	out, err = rt.Call(context.Background(), "patch_file", args)
	if err != nil {
		t.Fatal(err)
	}
	// The fixed version has no recorded run: the buggy version's runs are
	// replayed instead (and diverge: the new version reads another file),
	// and the report says so.
	rep := writtenGate(t, out)
	if rep == nil || rep.Divergence != 5 || rep.OldHash != transpile.Hash([]byte(gateBuggy)) ||
		rep.ReplacedHash != transpile.Hash([]byte(strings.Replace(gateBuggy, gateBugSearch, gateBugFix, 1))) || rep.Previous == "" {
		t.Fatalf("report: %s", out)
	}
}
