package executor

import (
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/config"
)

// The limits section names the negative limit, and stands for the
// executor's Limits; isolation and confine name what to write.
func TestLimitsConfig(t *testing.T) {
	if err := (LimitsConfig{MaxCallDepth: -3}).Validate(); err == nil || err.Error() != "limits must not be negative: limits.max_call_depth is -3 (0 takes the default)" {
		t.Errorf("a negative limit: %v", err)
	}
	l := LimitsConfig{Timeout: config.Duration(2 * time.Second), MemoryMB: 64, MaxCallDepth: 10, MaxOutputBytes: 100, MaxArgsBytes: 5}.Limits()
	if l != (Limits{Timeout: 2 * time.Second, MemoryBytes: 64 << 20, MaxCallDepth: 10, MaxOutputBytes: 100}) {
		t.Errorf("limits %+v", l)
	}
	if err := CheckIsolation("vm"); err == nil || !strings.HasPrefix(err.Error(), `isolation "vm" is not known: use "process"`) {
		t.Errorf("isolation: %v", err)
	}
	if err := CheckConfine("strict"); err == nil || !strings.HasPrefix(err.Error(), `confine "strict" is not known: use "best_effort" (the default)`) {
		t.Errorf("confine: %v", err)
	}
	for _, ok := range []error{CheckIsolation(""), CheckIsolation("inprocess"), CheckConfine(""), CheckConfine("off"), (LimitsConfig{}).Validate()} {
		if ok != nil {
			t.Error(ok)
		}
	}
}
