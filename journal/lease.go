package journal

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

// store is where a journal keeps its runs: a bbolt file (boltStore) or a
// PostgreSQL database (pgStore). Everything above it (redaction, canonical
// encoding, blobs, group commit, replay, the choice of what Prune deletes)
// is one code path whatever the storage.
type store interface {
	// apply commits a batch of writes in one transaction, all or nothing,
	// for owner at now: on a shared storage, a write to a run another
	// owner holds (a claim that has not lapsed at now) fails with
	// ErrClaimed: a node that lost a run can no longer write it. A write
	// with a fencing token (write.fence > 0) whose run has another token
	// now (it was claimed again since) fails with ErrFenced, whoever holds
	// the run and whether or not a claim is live.
	apply(batch []*write, owner string, now time.Time) error
	// runs returns every run's metadata, in no particular order.
	runs() ([]RunMeta, error)
	// runsPage returns up to n runs past at (see runCursor), newest first
	// (oldest first with oldest), with their call counts.
	runsPage(at runCursor, n int, oldest bool) ([]RunMeta, error)
	// toolRunsPage returns up to n runs of the tool at path (at version
	// hash, unless "") past at, newest first, with their call counts, from
	// the tool index (toolindex.go).
	toolRunsPage(path, hash string, at runCursor, n int) ([]RunMeta, error)
	// versionsOf tallies the versions of the tool at path from the tool
	// index: Hash, Runs, Required, First, Last and LastRun.
	versionsOf(path string) ([]Version, error)
	// prefixed returns the runs whose id starts with id, in id order.
	prefixed(id string) ([]RunMeta, error)
	exists(id string) (bool, error)
	// entries returns a run's entries in sequence order, payloads put back.
	entries(run string) ([]Entry, error)
	count(run string) (int, error)
	source(hash string) (src []byte, found bool, err error)
	// prune scans everything into a pruneScan, and deletes what decide
	// returns, in one transaction no write interleaves with.
	prune(decide func(*pruneScan) pruneDrop) error
	// liveBytes is at least what the journal stores (for Prune's cheap
	// first check).
	liveBytes() int64
	check(name string) error
	// claim makes owner the holder of run until until, if the run is
	// unheld, held by owner, or held by a claim that lapsed at now, and
	// returns the run's new fencing token: a number that grows with every
	// claim (a new run's is 1). A run that has ended (ok, failed) is never
	// claimed: claim fails with ErrEnded.
	claim(run, owner string, until, now time.Time) (fence int64, ok bool, err error)
	// fence returns run's current fencing token.
	fence(run string) (int64, error)
	// renew extends owner's claims on runs to until and returns the runs
	// among them owner no longer holds.
	renew(owner string, runs []string, until time.Time) (lost []string, err error)
	// release ends owner's claims on runs at now.
	release(owner string, runs []string, now time.Time) error
	// shared reports whether other processes use the storage at once.
	shared() bool
	path() string
	close() error
}

// errRunExists: a new run's id is taken (Begin draws another).
var errRunExists = errors.New("journal: a run with this id exists already")

// DefaultLease is Options.Lease's default: how long a claim on a run lasts
// unless its holder renews it (a live Journal renews every third of it).
const DefaultLease = 30 * time.Second

// defaultOwner names this process in claims: host, pid and a random part,
// so that two Journals in one process are two owners.
func defaultOwner() string {
	host, _ := os.Hostname()
	var r [4]byte
	rand.Read(r[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// Owner returns this Journal's name in run claims (Options.Owner, or one
// made up at open: host/pid/random).
func (j *Journal) Owner() string { return j.owner }

// Claim makes owner the holder of run runID for lease (0: Options.Lease)
// from now, and reports whether it did: it does when the run is not held,
// is held by owner already (a renewal), or its holder's claim lapsed (the
// holder died, or lost touch with the database, and stopped renewing). It
// reports false, with no error, when another owner holds a claim that has
// not lapsed.
//
// IMPORTANT: on a shared (PostgreSQL) journal, a node MUST win the claim of
// an unfinished run before it resumes, quarantines or fails it: that is
// what keeps two nodes from resuming one run at once. Recover claims for
// this Journal's Owner itself. Claims compare times of the nodes' clocks:
// their clocks MUST agree to well within the lease (NTP does). On the
// embedded bbolt journal the file lock already makes this process the only
// one, and Claim succeeds for any run that exists.
//
// Every claim gives the run a new fencing token, a number that only grows
// (the embedded journal keeps one too, per process). A Run begun or
// recovered by this Journal writes with the token it was given: once the
// run is claimed again (by another node after this one's lease lapsed, or
// by a second Recover here), its writes are refused at the store
// (ErrFenced), even if the new holder has finished the run and let its
// claim go. A run that has ended is never claimed again: Claim fails with
// an error wrapping ErrEnded.
func (j *Journal) Claim(runID, owner string, lease time.Duration) (bool, error) {
	if lease <= 0 {
		lease = j.opts.Lease
	}
	if owner == "" {
		return false, fmt.Errorf("journal: Claim needs an owner (the claiming node's name; Journal.Owner for this one)")
	}
	_, ok, err := j.claim(runID, owner, lease)
	return ok, err
}

// claim is Claim, also returning the run's new fencing token.
func (j *Journal) claim(runID, owner string, lease time.Duration) (int64, bool, error) {
	now := j.now()
	var (
		fence int64
		ok    bool
	)
	err := j.read(func(st store) (err error) {
		fence, ok, err = st.claim(runID, owner, now.Add(lease), now)
		return err
	})
	if ok && owner == j.owner {
		j.held.Store(runID, fence)
		j.lost.Delete(runID) // a claim lost before and won back: its later writes are ours again
	}
	return fence, ok, err
}

// HeldElsewhere reports whether another owner than this Journal holds a
// claim on run m that has not lapsed: on a shared journal, a live node is
// running it, and this one MUST leave it alone.
func (j *Journal) HeldElsewhere(m RunMeta) bool {
	return m.Owner != "" && m.Owner != j.owner && j.now().Before(m.LeaseUntil)
}

// heldRuns returns the runs this Journal holds.
func (j *Journal) heldRuns() []string {
	var out []string
	j.held.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	return out
}

// letGo ends this Journal's claim on run (its end, or its host stopped it).
func (j *Journal) letGo(run string) error {
	j.held.Delete(run)
	return j.readNow(func(st store) error { return st.release(j.owner, []string{run}, j.now()) })
}

// renewer renews this Journal's claims every third of the lease until
// Close.
func (j *Journal) renewer() {
	t := time.NewTicker(j.opts.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			_ = j.renew()
		}
	}
}

// renew extends the claims this Journal holds. A run whose claim another
// node took (this one failed to renew in time) is lost here: its later
// calls are refused, as after a failed write, so that two nodes never both
// perform its I/O.
func (j *Journal) renew() error {
	runs := j.heldRuns()
	if len(runs) == 0 {
		return nil
	}
	var lost []string
	err := j.read(func(st store) (err error) {
		lost, err = st.renew(j.owner, runs, j.now().Add(j.opts.Lease))
		return err
	})
	for _, id := range lost {
		j.held.Delete(id)
		j.lost.LoadOrStore(id, fmt.Errorf("%w: another node claimed run %s after this one failed to renew its claim in time", ErrClaimLost, id))
	}
	return err
}

// claimedError says who holds run id and until when.
func (j *Journal) claimedError(id string) error {
	m, err := j.Get(id)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: run %s is held by %s until %s; it becomes resumable here if that node stops renewing its claim (it died)", ErrClaimed, id, m.Owner, m.LeaseUntil.UTC().Format(time.RFC3339))
}

// Holds reports, reading the store, whether this Run may still act for its
// run: nil while the run's fencing token is the one this Run writes with;
// an error wrapping ErrFenced once the run was claimed again (another node
// took it over after this one's lease lapsed, or it was recovered again
// here); the store's error when it cannot be read.
//
// IMPORTANT: an effect outside the journal that a resumed run must not
// perform twice (a Git commit and push) MUST be preceded by Holds: the
// journal's own writes are fenced at the store, an outside effect only by
// this check (and by being idempotent).
func (r *Run) Holds() error {
	var cur int64
	err := r.j.read(func(st store) (err error) {
		cur, err = st.fence(r.meta.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("journal: checking the claim on run %s: %w", r.meta.ID, err)
	}
	if cur != r.fence {
		return fmt.Errorf("%w: run %s was claimed again (token %d) after this Run's claim (token %d)", ErrFenced, r.meta.ID, cur, r.fence)
	}
	return nil
}
