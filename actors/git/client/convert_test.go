package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestFailureOnTheWire: every sentinel a Written can carry comes back from
// its Failure with errors.Is working and the full message kept; an error
// wrapping none comes back as "internal" with its message.
func TestFailureOnTheWire(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range failureCodes {
		if seen[c.Code] {
			t.Errorf("code %q used twice", c.Code)
		}
		seen[c.Code] = true
		err := fmt.Errorf("tools/x.ts was written but not registered: %w", c.Err)
		f := FailureOf(err)
		if f.GetCode() != c.Code {
			t.Errorf("%v: code %q, want %q", c.Err, f.GetCode(), c.Code)
		}
		if back := errorOf(f); !errors.Is(back, c.Err) || back.Error() != err.Error() {
			t.Errorf("%v: came back as %v", c.Err, back)
		}
	}
	back := errorOf(FailureOf(errors.New("disk on fire")))
	if back == nil || back.Error() != "disk on fire" || errors.Is(back, ErrNotCompiled) {
		t.Errorf("unknown error came back as %v", back)
	}
	// A conflict keeps its data: the caller learns the branch that keeps
	// its version (errors.As), as it would in process.
	sent := &repo.ConflictError{Tool: "shared", Paths: []string{"tools/shared.ts"}, Branch: "conflict/shared-20261124T033546", Base: "main"}
	back = errorOf(FailureOf(fmt.Errorf("write_file: tools/shared.ts: %w", sent)))
	var ce *repo.ConflictError
	if !errors.As(back, &ce) || ce.Branch != sent.Branch || ce.Base != "main" || ce.Tool != "shared" || len(ce.Paths) != 1 || !errors.Is(back, repo.ErrConflict) {
		t.Errorf("a conflict came back as %#v (%v)", ce, back)
	}
	if FailureOf(nil) != nil || errorOf(nil) != nil {
		t.Error("nil error did not stay nil")
	}
}
