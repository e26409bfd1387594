package journal

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Issue 11, item 6: a run left "running" is shown "interrupted" exactly
// when no live process is its host.
func TestHostGone(t *testing.T) {
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	cases := []struct {
		name string
		h    Host
		gone bool
	}{
		{"this process", Host{PID: os.Getpid(), Boot: BootID(), Since: now}, false},
		{"a live process that took the run after it started", Host{PID: os.Getppid(), Boot: BootID(), Since: now}, false},
		{"a live process that started after the host took the run (pid reused)", Host{PID: os.Getppid(), Boot: BootID(), Since: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}, true},
		{"a process that exited", Host{PID: dead.Process.Pid, Boot: BootID(), Since: now}, true},
		{"another boot", Host{PID: os.Getppid(), Boot: "not-this-boot", Since: now}, BootID() != ""},
		{"the host stopped it", Host{PID: os.Getpid(), Boot: BootID(), Since: now, Interrupted: "cancelled: shutdown"}, true},
		{"no host recorded (an old journal): cannot tell", Host{}, false},
	}
	for _, c := range cases {
		if got := c.h.Gone(); got != c.gone {
			t.Errorf("%s: Gone() = %v, want %v", c.name, got, c.gone)
		}
	}
}

// The status shown and the resume command, on a real journal: a running run
// of this process is "running"; one whose host is gone is "interrupted"
// with 'agentos recover --run ID'; an ended run is shown as stored.
func TestShownStatus(t *testing.T) {
	both(t, func(t *testing.T) {
		j, err := openStorage(t, filepath.Join(t.TempDir(), "j.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		live, err := j.Begin(RunMeta{Kind: "exec", Tool: "tools/a.ts", Limits: &Limits{Timeout: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := j.Get(live.ID())
		if err != nil {
			t.Fatal(err)
		}
		if m.Shown() != StatusRunning || m.ResumeCommand() != "" || m.Limits == nil || m.Limits.Timeout != time.Minute || m.Since.IsZero() {
			t.Fatalf("a run in flight here: %s %q %+v", m.Shown(), m.ResumeCommand(), m)
		}
		m.PID = 1 << 30 // no such process
		if onPostgres(t) {
			// A shared journal: the host may be another machine, and the
			// claim alone says whether it lives.
			if m.Owner != j.Owner() || m.Shown() != StatusRunning {
				t.Fatalf("a run held by a live claim, whatever its pid: %s, owner %q", m.Shown(), m.Owner)
			}
			m.LeaseUntil = time.Now().Add(-time.Second) // its node stopped renewing
		}
		if m.Shown() != StatusInterrupted || m.ResumeCommand() != "agentos recover --run "+m.ID {
			t.Fatalf("a run whose host is gone: %s %q", m.Shown(), m.ResumeCommand())
		}
		if err := live.End(StatusOK, []byte("1"), nil); err != nil {
			t.Fatal(err)
		}
		if m, _ = j.Get(live.ID()); m.Shown() != StatusOK || m.ResumeCommand() != "" {
			t.Fatalf("an ended run: %s %q", m.Shown(), m.ResumeCommand())
		}
	})
}
