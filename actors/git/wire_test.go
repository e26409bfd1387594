package git

import (
	"errors"
	"fmt"
	"testing"
)

// TestFailureOnTheWire: every sentinel a Written can carry comes back from
// its Failure with errors.Is working and the full message kept; an error
// wrapping none comes back as "internal" with its message.
func TestFailureOnTheWire(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range failureCodes {
		if seen[c.code] {
			t.Errorf("code %q used twice", c.code)
		}
		seen[c.code] = true
		err := fmt.Errorf("tools/x.ts was written but not registered: %w", c.err)
		f := failureOf(err)
		if f.GetCode() != c.code {
			t.Errorf("%v: code %q, want %q", c.err, f.GetCode(), c.code)
		}
		if back := errorOf(f); !errors.Is(back, c.err) || back.Error() != err.Error() {
			t.Errorf("%v: came back as %v", c.err, back)
		}
	}
	back := errorOf(failureOf(errors.New("disk on fire")))
	if back == nil || back.Error() != "disk on fire" || errors.Is(back, ErrNotCompiled) {
		t.Errorf("unknown error came back as %v", back)
	}
	if failureOf(nil) != nil || errorOf(nil) != nil {
		t.Error("nil error did not stay nil")
	}
}
