package workerside

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildOfTrustsOnlyWhatNamesTheSources: a stamp, a module version or a
// clean revision names a build; a modified tree or no VCS information does
// not, whatever the rest says, so that a stale worker of a dirty tree is
// never taken for this one.
func TestBuildOfTrustsOnlyWhatNamesTheSources(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-02T10:00:00Z"}, {Key: "vcs.modified", Value: modified}}
	}
	bi := func(version string, s []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "github.com/agentos-run/agentos", Version: version}, Settings: s}
	}
	stamped := []debug.BuildSetting{{Key: "-ldflags", Value: "-s -X github.com/agentos-run/agentos" + stampFlag + "v1.2.3 -w"}}
	cases := []struct {
		name    string
		bi      *debug.BuildInfo
		trusted bool
		why     string
	}{
		{"stamped", bi("(devel)", stamped), true, ""},
		{"module version", bi("v1.2.3", nil), true, ""},
		{"clean checkout", bi("(devel)", vcs("abc", "false")), true, ""},
		{"modified tree", bi("(devel)", vcs("abc", "true")), false, "modified tree"},
		{"no vcs", bi("(devel)", nil), false, "without version control"},
	}
	for _, c := range cases {
		b := BuildOf(c.bi)
		if b.Trusted != c.trusted || !strings.Contains(b.Why, c.why) || b.ID == "" {
			t.Errorf("%s: got %+v, want trusted %v, why containing %q", c.name, b, c.trusted, c.why)
		}
	}
	if a, b := BuildOf(bi("(devel)", vcs("abc", "false"))), BuildOf(bi("(devel)", vcs("abd", "false"))); a.ID == b.ID {
		t.Errorf("two revisions share ID %s", a.ID)
	}
	if a, b := BuildOf(bi("(devel)", stamped)), BuildOf(bi("v9", stamped)); a.ID != b.ID {
		t.Errorf("one stamp, two IDs: %s, %s", a.ID, b.ID)
	}
	if got, want := BuildOf(bi("(devel)", stamped)).ID, digest("stamp", "v1.2.3"); got != want {
		t.Errorf("a stamp read from -ldflags is %s, the same stamp set in the program is %s", got, want)
	}
}
