package system_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentos-run/agentos/actors/system"
)

var (
	errOuter = errors.New("outer")
	errInner = errors.New("inner")
)

// TestFailureCodes: an error goes out as the code of the first sentinel it
// wraps (table order), or "internal"; it comes back with its text, wrapping
// the code's sentinel, or the typed cause given, or nothing.
func TestFailureCodes(t *testing.T) {
	table := system.FailureCodes{{Code: "outer", Err: errOuter}, {Code: "inner", Err: errInner}}
	both := fmt.Errorf("%w: %w", errInner, errOuter)
	if got := table.CodeOf(both); got != "outer" {
		t.Errorf("CodeOf of an error wrapping both = %q, want the first in the table", got)
	}
	if got := table.CodeOf(errors.New("disk on fire")); got != system.CodeInternal {
		t.Errorf("CodeOf of an unknown error = %q", got)
	}
	back := table.ErrorOf("inner", "tools/x.ts: inner", nil)
	if !errors.Is(back, errInner) || errors.Is(back, errOuter) || back.Error() != "tools/x.ts: inner" {
		t.Errorf("ErrorOf(inner) = %v", back)
	}
	var re *system.RemoteError
	if !errors.As(back, &re) || re.Code != "inner" {
		t.Errorf("ErrorOf is not a *RemoteError with its code: %#v", back)
	}
	typed := &typedErr{n: 7}
	back = table.ErrorOf("inner", "typed", typed)
	if te := (*typedErr)(nil); !errors.As(back, &te) || te.n != 7 || errors.Is(back, errInner) {
		t.Errorf("ErrorOf with a cause = %v", back)
	}
	if back = table.ErrorOf(system.CodeInternal, "boom", nil); errors.Unwrap(back) != nil || back.Error() != "boom" {
		t.Errorf("ErrorOf(internal) = %v wrapping %v", back, errors.Unwrap(back))
	}
}

type typedErr struct{ n int }

func (e *typedErr) Error() string { return fmt.Sprint("typed ", e.n) }
