package journal

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Host says where a run executes and whether its host stopped it. It is
// recorded (committed) before the run's tool starts, so that after a crash
// recovery can tell a run whose host died under it (possibly killed by the
// tool itself, when it ran in-process) from one its host cancelled.
type Host struct {
	// Isolation is where the run's tool executes: "process" (a sandbox
	// worker) or "inprocess" (the host's own process); empty for runs that
	// are not tool runs, or were recorded before agentos kept it.
	Isolation string `json:"isolation,omitempty"`
	// PID and Boot identify the host process: its pid and the machine's
	// boot id (a pid is reused after a reboot).
	PID  int    `json:"host_pid,omitempty"`
	Boot string `json:"host_boot,omitempty"`
	// Since is when that process took the run (began or resumed it): a
	// later process that reuses the pid is not the host.
	Since time.Time `json:"host_since,omitzero"`
	// Interrupted is set when the host itself stopped the run and survived
	// (a shutdown): the run is left resumable and did not harm its host.
	Interrupted string `json:"interrupted,omitempty"`
	// Quarantine is why the run was quarantined: its host died while it ran
	// in-process. It stays set when the run is resumed: IMPORTANT: such a
	// run MUST never run in-process again.
	Quarantine string `json:"quarantine,omitempty"`
	// Owner and LeaseUntil are the claim on the run in a shared
	// (PostgreSQL) journal: the node that holds it, until when (see
	// Journal.Claim). They are read from the journal's claim, never
	// written by a metadata write; empty in the embedded journal.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
}

// stamp records this process as the host.
func (h *Host) stamp() {
	h.PID, h.Boot, h.Since = os.Getpid(), BootID(), time.Now().UTC()
}

// StatusInterrupted is how a run is shown (never stored) whose status is
// "running" but which no live process runs: its host was killed, crashed
// or stopped it. 'agentos recover --run ID' resumes it (ResumeCommand).
const StatusInterrupted = "interrupted"

// Gone reports whether the run's host process is certainly no longer
// running it: it stopped the run itself (Interrupted), the machine
// rebooted since, or no live process is the host (no process has its pid,
// or the one that has started after the host took the run). In a shared
// (PostgreSQL) journal, where the host may be another machine, the claim
// alone tells: the host is gone once its claim lapsed (or it let it go), by
// this machine's clock. It is false when it cannot tell (a run recorded
// before agentos kept its host).
func (h Host) Gone() bool {
	switch {
	case h.Interrupted != "":
		return true
	case !h.LeaseUntil.IsZero():
		return !time.Now().Before(h.LeaseUntil)
	case h.PID == 0:
		return false
	case h.Current():
		return false
	case h.Boot != "" && BootID() != "" && h.Boot != BootID():
		return true
	}
	return hostGone(h)
}

// Shown is the status a user is shown for the run: its stored status,
// except that a "running" run whose host is Gone is "interrupted".
func (m RunMeta) Shown() string {
	if m.Status == StatusRunning && m.Gone() {
		return StatusInterrupted
	}
	return m.Status
}

// ResumeCommand is the command that resumes the run when it is
// interrupted or quarantined ("" otherwise): 'agentos recover --run ID' for
// a tool run or a forge (a forge is also resumed by the next node that
// serves the root, 'agentos serve').
func (m RunMeta) ResumeCommand() string {
	s := m.Shown()
	switch {
	case s != StatusInterrupted && s != StatusQuarantined:
		return ""
	case m.Kind == "exec", m.Kind == "forge" && s == StatusInterrupted:
		return "agentos recover --run " + m.ID
	}
	return ""
}

// Current reports whether h is this very process: a run it hosts is in
// flight here, not left over by a crash.
func (h Host) Current() bool {
	return h.PID == os.Getpid() && h.Boot == BootID()
}

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// BootID returns the machine's boot id ("" where the system does not say).
func BootID() string { return bootID() }

// Interrupt records, committed before it returns, that the run's host
// stopped it and lives on (why, e.g. "cancelled: shutdown"). The run stays
// "running", resumable.
func (r *Run) Interrupt(why string) error {
	if why == "" {
		why = "interrupted"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	r.dirty.Store(false) // the modules are written with it
	r.meta.Interrupted = why
	if err := r.putMeta(&write{}, true); err != nil {
		_ = r.j.letGo(r.meta.ID) // resumable once the claim lapses
		return err
	}
	// Stopped here: another node may resume it now (a claim that fails to
	// go lapses by itself).
	_ = r.j.letGo(r.meta.ID)
	return nil
}

// Rehost records, committed before it returns, that this process is about
// to resume the run with the given isolation: its status is "running"
// again and a crash from now on is this process's. A quarantined run keeps
// its Quarantine reason.
func (r *Run) Rehost(isolation string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = false
	r.meta.Status = StatusRunning
	r.meta.Isolation = isolation
	r.meta.Interrupted = ""
	r.meta.Host.stamp()
	return r.putMeta(&write{}, true)
}

// Quarantine sets run id aside with the reason, committed before it
// returns: its host died while it ran in-process, so it is not resumed
// automatically (Unfinished no longer lists it).
func (j *Journal) Quarantine(id, reason string) error {
	m, err := j.Get(id)
	if err != nil {
		return err
	}
	if m.Status != StatusRunning {
		return fmt.Errorf("journal: run %s is %s, not running: only an unfinished run can be quarantined", m.ID, m.Status)
	}
	m.Status, m.Quarantine, m.Reason = StatusQuarantined, reason, reason
	return j.putMeta(m)
}
