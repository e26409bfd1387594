package journal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/journal"
)

// journal_durability names each mode; anything else says what to write.
// journal_lease under a second is refused.
func TestParseDurabilityAndLease(t *testing.T) {
	for s, want := range map[string]journal.Durability{"": journal.GroupCommit, "group_commit": journal.GroupCommit, "sync_each": journal.SyncEach, "no_sync": journal.NoSync, "write_each": journal.WriteEach} {
		if d, err := journal.ParseDurability(s); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", s, d, err, want)
		}
	}
	if _, err := journal.ParseDurability("fsync"); err == nil || !strings.HasPrefix(err.Error(), `journal_durability "fsync" is not a mode: use "group_commit"`) {
		t.Errorf("fsync: %v", err)
	}
	if err := journal.CheckLease(500 * time.Millisecond); err == nil || !strings.HasPrefix(err.Error(), "journal_lease 500ms is too short") {
		t.Errorf("a short lease: %v", err)
	}
	if journal.CheckLease(0) != nil || journal.CheckLease(time.Second) != nil {
		t.Error("the default lease and 1s must be accepted")
	}
}
