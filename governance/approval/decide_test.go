package approval_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/governance/approval"
)

// DecideTarget decides a pending request named by its (cleaned) path, and
// a version no request names as judge judges it; it refuses an empty
// target and a path outside the tool root without asking judge.
func TestDecideTarget(t *testing.T) {
	g := approval.NewGate(open(t, filepath.Join(t.TempDir(), "approvals.db")), approval.Policy{}, nil)
	pending, err := g.Request(ask)
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	judge := func(p, version string) (approval.Ask, error) {
		judged++
		if p != "tools/y.ts" || version != "" {
			return approval.Ask{}, errors.New("no such tool")
		}
		a := ask
		a.Path, a.Hash = p, strings.Repeat("e", 64)
		return a, nil
	}
	r, err := g.DecideTarget(" ./tools/../tools/x.ts ", true, "ops", "read it", judge)
	if err != nil || r.ID != pending.ID || r.State != approval.StateApproved || r.DecidedBy != "ops" || judged != 0 {
		t.Fatalf("the pending request by its path: %+v %v (judged %d)", r, err, judged)
	}
	r, err = g.DecideTarget("tools/y.ts", false, "ops", "no", judge)
	if err != nil || r.Path != "tools/y.ts" || r.Hash != strings.Repeat("e", 64) || r.State != approval.StateDenied || r.RequestedBy != "ops" || judged != 1 {
		t.Fatalf("a judged version: %+v %v (judged %d)", r, err, judged)
	}
	if _, err := g.DecideTarget("tools/z.ts", true, "ops", "", judge); err == nil || !strings.Contains(err.Error(), "neither a pending approval request nor a tool version here: no such tool") {
		t.Errorf("an unknown tool: %v", err)
	}
	for _, bad := range []string{"", "  ", "/etc/passwd", "../x.ts", ".."} {
		before := judged
		if _, err := g.DecideTarget(bad, true, "ops", "", judge); err == nil || judged != before {
			t.Errorf("%q: %v (judged %d times)", bad, err, judged-before)
		}
	}
}
