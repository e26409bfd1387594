package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/journal"
)

// Select keeps the finished runs of the version asked for, newest first,
// leaves out replays, other tools and versions, unfinished runs and runs
// whose arguments were redacted (counted), and bounds them.
func TestSelect(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_700_000_000+int64(s), 0) }
	all := []journal.RunMeta{
		{ID: "old-ok", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusOK, Started: at(1)},
		{ID: "failed", Tool: "./tools/x.ts", Hash: "h1", Status: journal.StatusFailed, Started: at(3)},
		{ID: "newest", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusOK, Started: at(5)},
		{ID: "running", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusRunning, Started: at(6)},
		{ID: "quarantined", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusQuarantined, Started: at(6)},
		{ID: "replay", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusOK, ReplayOf: "newest", Started: at(7)},
		{ID: "redacted", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusOK, ArgsRedacted: true, Started: at(8)},
		{ID: "other-version", Tool: "tools/x.ts", Hash: "h2", Status: journal.StatusOK, Started: at(9)},
		{ID: "other-tool", Tool: "tools/y.ts", Hash: "h1", Status: journal.StatusOK, Started: at(9)},
		{ID: "forge", Kind: "forge", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusOK, Started: at(9)},
	}
	runs, found, skipped := Select(all, "tools/x.ts", "h1", 2)
	if found != 4 || skipped != 1 || len(runs) != 2 || runs[0].ID != "newest" || runs[1].ID != "failed" {
		t.Fatalf("Select: %d found, %d skipped, %v", found, skipped, runs)
	}
	if runs, _, _ := Select(all, "tools/x.ts", "h1", 10); len(runs) != 3 {
		t.Fatalf("Select unbounded by the runs there are: %v", runs)
	}
	if h, ok := PreviousHash(all, "tools/x.ts", "h2"); !ok || h != "h1" {
		t.Fatalf("PreviousHash before h2: %q %v", h, ok)
	}
	if h, ok := PreviousHash(all, "tools/x.ts", "h1"); !ok || h != "h2" {
		t.Fatalf("PreviousHash before h1: %q %v", h, ok)
	}
	if _, ok := PreviousHash(all, "tools/z.ts", "h1"); ok {
		t.Fatal("PreviousHash of a tool without runs")
	}
	// The fallback of a replaced version without runs: never the new
	// version, never an excluded one, only versions with runs the gate can
	// replay, ordered by their runs as the current file (not by a run of
	// an old version called by its hash).
	all = append(all,
		journal.RunMeta{ID: "h3-running", Tool: "tools/x.ts", Hash: "h3", Status: journal.StatusRunning, Started: at(20)},
		journal.RunMeta{ID: "h4-redacted", Tool: "tools/x.ts", Hash: "h4", Status: journal.StatusOK, ArgsRedacted: true, Started: at(21)},
		journal.RunMeta{ID: "h5-replay", Tool: "tools/x.ts", Hash: "h5", Status: journal.StatusOK, ReplayOf: "x", Started: at(22)},
		journal.RunMeta{ID: "h1-at-version", Tool: "tools/x.ts", Hash: "h1", Status: journal.StatusOK, AtVersion: true, Started: at(23)},
	)
	if h, ok := PreviousHash(all, "tools/x.ts", "new", "h6"); !ok || h != "h2" {
		t.Fatalf("PreviousHash with runs it cannot replay: %q %v", h, ok)
	}
	if h, ok := PreviousHash(all, "tools/x.ts", "new", "h2"); !ok || h != "h1" {
		t.Fatalf("PreviousHash excluding h2: %q %v", h, ok)
	}
	if h, ok := PreviousHash(all, "tools/x.ts", "h1", "h2"); ok {
		t.Fatalf("PreviousHash returned %q with the new and the excluded versions the only ones", h)
	}
}

// Under PolicyBlock a run that could not be judged blocks unless
// BlockOnError is explicitly false; never under PolicyWarn.
func TestBlocksOnError(t *testing.T) {
	f, tr := false, true
	for _, tc := range []struct {
		o    Options
		want bool
	}{
		{Options{Policy: PolicyBlock}, true},
		{Options{Policy: PolicyBlock, BlockOnError: &f}, false},
		{Options{Policy: PolicyBlock, BlockOnError: &tr}, true},
		{Options{Policy: PolicyWarn, BlockOnError: &tr}, false},
		{Options{}, false},
	} {
		if got := tc.o.BlocksOnError(); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.o, got, tc.want)
		}
	}
}

func TestAppliesAndOptions(t *testing.T) {
	for _, tc := range []struct {
		path     string
		old, new string
		want     bool
	}{
		{"tools/x.ts", "a", "b", true},
		{"tools/x.js", "a", "b", true},
		{"tools/x.ts", "a", "a", false},      // unchanged
		{"tools/x.test.ts", "a", "b", false}, // a test
		{"tools/.forge/x.ts", "a", "b", false},
		{"tools/data.csv", "a", "b", false},
	} {
		if got := Applies(tc.path, []byte(tc.old), []byte(tc.new)); got != tc.want {
			t.Errorf("Applies(%s) = %v", tc.path, got)
		}
	}
	if Applies("tools/x.ts", nil, []byte("a")) {
		t.Error("a new file is gated")
	}
	if err := (Options{Policy: "strict"}).Validate(); err == nil || !strings.Contains(err.Error(), `"warn"`) {
		t.Errorf("bad policy: %v", err)
	}
	if o := (Options{}).withDefaults(); o.Runs != DefaultRuns || o.Policy != PolicyWarn || o.Timeout != DefaultTimeout {
		t.Errorf("defaults: %+v", o)
	}
	if (Options{Runs: -1}).Enabled() {
		t.Error("Runs -1 is enabled")
	}
}

// A blocked report's error names each changed run with what changed.
func TestReportErr(t *testing.T) {
	r := Report{Path: "tools/x.ts", OldHash: strings.Repeat("a", 64), Policy: PolicyBlock, Runs: []RunReport{
		{Run: "r1", Outcome: OutcomeDifferent, Old: "5", New: "6"},
		{Run: "r2", Outcome: OutcomeDivergence, Code: "AGENTOS-J001", Seq: 2},
		{Run: "r3", Outcome: OutcomeSame},
	}}
	r.count()
	if r.Err() != nil {
		t.Fatal("an unblocked report has an error")
	}
	r.Blocked = true
	msg := r.Err().Error()
	for _, w := range []string{"r1 (different: 5 -> 6)", "r2 (divergence [AGENTOS-J001] at call #2)", "aaaaaaaaaaaa", "Nothing was written"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "r3") {
		t.Errorf("%q names the unchanged run", msg)
	}
	// It addresses the caller, often an agent: what a human operator can
	// do, not an invitation to switch the policy to warn.
	for _, bad := range []string{`"warn"`, "governance.gate.policy"} {
		if strings.Contains(msg, bad) {
			t.Errorf("%q invites weakening the policy (%s)", msg, bad)
		}
	}
	if !strings.Contains(msg, "agentos check --against-runs tools/x.ts") || !strings.Contains(msg, "human operator") {
		t.Errorf("%q does not say what the operator can do", msg)
	}
	// Runs of an earlier version than the replaced one: the error says so.
	r.ReplacedHash = strings.Repeat("b", 64)
	if msg := r.Err().Error(); !strings.Contains(msg, "version aaaaaaaaaaaa (the version being replaced, bbbbbbbbbbbb, has no recorded run") {
		t.Errorf("%q does not name the version replayed and the one replaced", msg)
	}
}

// Dependents keeps the replayable runs of other tools that required the
// module's old version, the newest n of each entry; without any, those of
// the newest other version but the new one.
func TestDependents(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_700_000_000+int64(s), 0) }
	mod := func(h string) []journal.Module { return []journal.Module{{Path: "tools/lib/x.ts", Hash: h}} }
	all := []journal.RunMeta{
		{ID: "a1", Tool: "tools/a.ts", Hash: "e", Modules: mod("m1"), Status: journal.StatusOK, Started: at(1)},
		{ID: "a2", Tool: "tools/a.ts", Hash: "e", Modules: mod("m1"), Status: journal.StatusFailed, Started: at(2)},
		{ID: "a3", Tool: "tools/a.ts", Hash: "e", Modules: mod("m1"), Status: journal.StatusOK, Started: at(3)},
		{ID: "b1", Tool: "tools/b.ts", Hash: "f", Modules: mod("m1"), Status: journal.StatusOK, Started: at(4)},
		{ID: "b-replay", Tool: "tools/b.ts", Hash: "f", Modules: mod("m1"), Status: journal.StatusOK, ReplayOf: "b1", Started: at(5)},
		{ID: "b-running", Tool: "tools/b.ts", Hash: "f", Modules: mod("m1"), Status: journal.StatusRunning, Started: at(6)},
		{ID: "c-other", Tool: "tools/c.ts", Hash: "g", Modules: mod("m0"), Status: journal.StatusOK, Started: at(7)},
		{ID: "own", Tool: "tools/lib/x.ts", Hash: "m1", Status: journal.StatusOK, Started: at(8)},
	}
	ids := func(rs []journal.RunMeta) (out []string) {
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(Dependents(all, "tools/lib/x.ts", "m1", "m2", 2)); strings.Join(got, ",") != "b1,a3,a2" {
		t.Fatalf("Dependents of m1: %v", got)
	}
	// m3 never ran: the runs of the newest other version (m0, whose run is the newest).
	if got := ids(Dependents(all, "tools/lib/x.ts", "m3", "m2", 1)); strings.Join(got, ",") != "c-other" {
		t.Fatalf("Dependents falling back from a version without runs: %v", got)
	}
	if got := Dependents(all, "tools/lib/y.ts", "m1", "m2", 5); len(got) != 0 {
		t.Fatalf("Dependents of a module nobody required: %v", ids(got))
	}
}
