package executor

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Issue 10, item 13: a SIGKILLed run leaves its /tmp (agentos-run-*)
// behind. The next executor removes the ones no process holds open, and
// only those.
func TestStaleScratchDirectoriesAreRemoved(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string, age time.Duration) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "sub", "x"), []byte("left by a killed run"), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := mk("agentos-run-111", time.Hour)
	held := mk("agentos-run-222", time.Hour) // a live run: its process holds it open
	heldDeep := mk("agentos-run-333", time.Hour)
	fresh := mk("agentos-run-444", 0) // just made by a live process that has not opened it yet
	other := mk("not-agentos-555", time.Hour)
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := os.Open(filepath.Join(heldDeep, "sub", "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	removed := cleanStaleScratch(tmp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !slices.Equal(removed, []string{stale}) {
		t.Fatalf("removed %v, want only %s", removed, stale)
	}
	for _, d := range []string{held, heldDeep, fresh, other} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s was removed: %v", d, err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", stale, err)
	}

	// New does it.
	again := mk("agentos-run-666", time.Hour)
	newExec(t, IsolationInProcess, nil, func(o *Options) { o.TempDir = tmp })
	if _, err := os.Stat(again); !os.IsNotExist(err) {
		t.Fatalf("New left %s: %v", again, err)
	}
}
