package journal

import (
	"fmt"
	"time"
)

// ParseDurability reads agentos.json's "journal_durability": "" or
// "group_commit" (GroupCommit, the default), "sync_each", "no_sync" or
// "write_each". Anything else is an error saying what each mode can lose.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "", "group_commit":
		return GroupCommit, nil
	case "sync_each":
		return SyncEach, nil
	case "no_sync":
		return NoSync, nil
	case "write_each":
		return WriteEach, nil
	}
	return 0, fmt.Errorf("journal_durability %q is not a mode: use \"group_commit\" (the default), \"sync_each\" (nothing anyone saw is lost in a crash), \"no_sync\" (scratch roots) or \"write_each\" (each record handed to the OS before use: survives kill -9, not power loss); docs/REPLAY.md says what each can lose", s)
}

// CheckLease checks agentos.json's "journal_lease" (0: DefaultLease): a
// claim is renewed every third of it, so it MUST be 1 s or more.
func CheckLease(d time.Duration) error {
	if d != 0 && d < time.Second {
		return fmt.Errorf("journal_lease %s is too short: a claim is renewed every third of it, and a node slower than that would lose its runs to another; use 1s or more (default 30s)", d)
	}
	return nil
}
