package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// snapKey is the signing key the nodes of these tests share.
var snapKey = bytes.Repeat([]byte("k"), 32)

// snapKernel is a kernel with an authority on key and snapshots kept in a
// real bbolt journal at path.
func snapKernel(t *testing.T, key []byte, j *journal.Journal) *kernel.Kernel {
	t.Helper()
	auth, err := capability.New(capability.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Options{Authority: auth, Logger: quiet, Snapshots: kernel.JournalSnapshots(j)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close(context.Background()) })
	return k
}

func openJournal(t *testing.T, path string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// worker is the image of these tests. A fresh worker spends (two checks of
// its token, three tool_calls), exposes {"n":3} and waits without reading
// its mailbox; a restored one reports what it finds to found.
type found struct {
	state    string
	msgs     []string
	left     float64
	checks   int // successful checks of its read right before the token was used up
	usedUp   bool
	canWrite bool
	name     string
}

func workerImage(report chan<- found) kernel.Main {
	return func(ctx context.Context, p *kernel.Process) error {
		if !p.Restored() {
			for range 2 {
				if err := p.Check(capability.Read, "tools/a.ts"); err != nil {
					return err
				}
			}
			if err := p.Charge(capability.ToolCalls, 3); err != nil {
				return err
			}
			if err := p.SetState(json.RawMessage(`{"n":3}`)); err != nil {
				return err
			}
			report <- found{}
			<-ctx.Done()
			return nil
		}
		f := found{state: string(p.State()), name: p.Name()}
		for p.Mailbox() > 0 {
			m, err := p.Recv(ctx)
			if err != nil {
				return err
			}
			f.msgs = append(f.msgs, string(m.Body.(json.RawMessage)))
		}
		f.left, _ = p.Account().Left(capability.ToolCalls)
		f.canWrite = p.Covers(capability.Write, "tools/a.ts")
		for range 10 {
			err := p.Check(capability.Read, "tools/a.ts")
			if errors.Is(err, capability.ErrUsedUp) {
				f.usedUp = true
				break
			}
			if err != nil {
				return err
			}
			f.checks++
		}
		report <- f
		<-ctx.Done()
		return nil
	}
}

func spawnWorker(t *testing.T, k *kernel.Kernel, report chan found) *kernel.Process {
	t.Helper()
	if err := k.RegisterImage("worker", workerImage(report)); err != nil {
		t.Fatal(err)
	}
	p, err := k.Spawn(workerImage(report), kernel.SpawnOptions{
		Name: "w", Image: "worker",
		Grants:  []capability.Grant{{Right: capability.Read, Scope: "tools/"}},
		Caveats: capability.Caveats{NotAfter: time.Now().Add(time.Hour), MaxUses: 5},
		Quota:   capability.Limits{capability.ToolCalls: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-report // it has spent
	for _, body := range []string{`{"job":1}`, `{"job":2}`} {
		if err := k.Send(p.PID(), json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func checkRestored(t *testing.T, f found) {
	t.Helper()
	if f.state != `{"n":3}` || len(f.msgs) != 2 || f.msgs[0] != `{"job":1}` || f.msgs[1] != `{"job":2}` || f.name != "w" {
		t.Fatalf("restored process found %+v: want its state, both messages in order and its name", f)
	}
	if f.left != 7 {
		t.Fatalf("tool_calls left after restore = %v, want 7 (10 - 3 spent before the snapshot)", f.left)
	}
	if f.checks != 3 || !f.usedUp || f.canWrite {
		t.Fatalf("restored token: %d checks then used up=%v, write=%v; want exactly the 3 uses left, and no write right", f.checks, f.usedUp, f.canWrite)
	}
}

// Snapshot, kill, fork: the process continues with the same budget left,
// the same rights (uses left included, never more) and the messages that
// were waiting. Without the fork, a snapshot taken without kill does not
// restore, before or after the process ended.
func TestSnapshotKillRestore(t *testing.T) {
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	k := snapKernel(t, snapKey, j)
	report := make(chan found, 1)
	p := spawnWorker(t, k, report)

	_, id, err := k.Snapshot(tctx(t), p.PID(), kernel.SnapshotOptions{})
	if err != nil || id == "" {
		t.Fatalf("snapshot: %q %v", id, err)
	}
	// The name is held while the original lives.
	s, err := k.LoadSnapshot(tctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Restore(s, kernel.RestoreOptions{}); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("restore while the original lives: %v, want ErrNotRestorable", err)
	}
	if err := k.Kill(p.PID(), "test"); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	// Ended, it may have spent after the snapshot: still only a fork.
	if _, err := k.Restore(s, kernel.RestoreOptions{}); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("restore of a snapshot taken without kill: %v, want ErrNotRestorable", err)
	}
	r, err := k.Restore(s, kernel.RestoreOptions{Fork: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.PID() == p.PID() {
		t.Fatal("the restored process has the old pid")
	}
	checkRestored(t, <-report)
	meta, err := j.Get(id)
	if err != nil || meta.Kind != kernel.SnapshotKind || meta.Status != journal.StatusOK || meta.Tool != "w" {
		t.Fatalf("snapshot run: %+v %v", meta, err)
	}
}

// A snapshot taken with Kill ends the process in the same step; another
// kernel sharing the key (another node) restores it from the sealed bytes;
// a kernel with another key, or an edited snapshot, restores nothing.
func TestRestoreOnAnotherKernel(t *testing.T) {
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	k1 := snapKernel(t, snapKey, j)
	report := make(chan found, 1)
	p := spawnWorker(t, k1, report)
	s, _, err := k1.Snapshot(tctx(t), p.PID(), kernel.SnapshotOptions{Kill: true, By: "migration"})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := p.Reason(); !ok || r.Kind != kernel.Killed || r.Detail != "migration" {
		t.Fatalf("after a snapshot with Kill: %v %v", r, ok)
	}
	sealed := s.Encode()

	// Another key: refused.
	other := snapKernel(t, bytes.Repeat([]byte("x"), 32), openJournal(t, filepath.Join(t.TempDir(), "other.db")))
	_ = other.RegisterImage("worker", workerImage(report))
	d, _ := kernel.DecodeSnapshot(sealed)
	if _, err := other.Restore(d, kernel.RestoreOptions{}); !errors.Is(err, capability.ErrInvalid) {
		t.Fatalf("restore under another key: %v, want capability.ErrInvalid", err)
	}
	// Edited: more rights, or more budget, are refused.
	for _, edit := range [][2]string{{`"right":"read"`, `"right":"write"`}, {`"tool_calls":3`, `"tool_calls":0`}} {
		forged := bytes.Replace(sealed, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(forged, sealed) {
			t.Fatalf("the edit %q found nothing to change in %s", edit[0], sealed)
		}
		d, err := kernel.DecodeSnapshot(forged)
		if err != nil {
			t.Fatal(err)
		}
		k3 := snapKernel(t, snapKey, openJournal(t, filepath.Join(t.TempDir(), "k3.db")))
		_ = k3.RegisterImage("worker", workerImage(report))
		if _, err := k3.Restore(d, kernel.RestoreOptions{}); !errors.Is(err, capability.ErrInvalid) {
			t.Fatalf("restore of a snapshot edited %q: %v, want capability.ErrInvalid", edit, err)
		}
	}

	// Another node with the same key, through its kernel actor, from the
	// sealed bytes (it does not share the journal).
	k2 := snapKernel(t, snapKey, openJournal(t, filepath.Join(t.TempDir(), "node2.db")))
	if err := k2.RegisterImage("worker", workerImage(report)); err != nil {
		t.Fatal(err)
	}
	c2, _ := startKernelActor(t, k2)
	pid, name, err := c2.RestoreSealed(tctx(t), sealed, "")
	if err != nil || pid == 0 || name != "w" {
		t.Fatalf("restore on node 2: %v %q %v", pid, name, err)
	}
	checkRestored(t, <-report)
}

// Through the kernel actor by name: Snapshot stores, Restore by id (a
// prefix) restores; errors cross as the kernel's sentinels.
func TestSnapshotRestoreMessages(t *testing.T) {
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"))
	k := snapKernel(t, snapKey, j)
	c, _ := startKernelActor(t, k)
	report := make(chan found, 1)
	spawnWorker(t, k, report)

	if _, err := c.Snapshot(tctx(t), "nobody", false, ""); !errors.Is(err, kernel.ErrNoProcess) {
		t.Fatalf("snapshot of an unknown name: %v", err)
	}
	info, err := c.Snapshot(tctx(t), "w", true, "test")
	if err != nil || info.ID == "" || info.Mailbox != 2 || info.Image != "worker" || info.Name != "w" {
		t.Fatalf("snapshot: %+v %v", info, err)
	}
	if _, _, err := c.Restore(tctx(t), "no-such-snapshot", ""); err == nil {
		t.Fatal("restore of an unknown id succeeded")
	}
	pid, name, err := c.Restore(tctx(t), info.ID[:len(info.ID)-2], "w2")
	if err != nil || pid == 0 || name != "w2" {
		t.Fatalf("restore: %v %q %v", pid, name, err)
	}
	f := <-report
	f.name = "w" // restored under another name, as asked
	checkRestored(t, f)
}

// A process with a mailbox message that cannot be written as JSON is not
// snapshotted, and says which message.
func TestSnapshotRefusesAChannel(t *testing.T) {
	k := snapKernel(t, snapKey, openJournal(t, filepath.Join(t.TempDir(), "journal.db")))
	p, err := k.Spawn(blocker, kernel.SpawnOptions{Image: "blocker"})
	if err != nil {
		t.Fatal(err)
	}
	_ = k.Send(p.PID(), make(chan int))
	if _, _, err := k.Snapshot(tctx(t), p.PID(), kernel.SnapshotOptions{}); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("snapshot with a channel in the mailbox: %v", err)
	}
	q, _ := k.Spawn(blocker, kernel.SpawnOptions{})
	if _, _, err := k.Snapshot(tctx(t), q.PID(), kernel.SnapshotOptions{}); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("snapshot of a process without an image: %v", err)
	}
}

// A child bounded only by its parent's quota keeps that bound when it is
// restored: the snapshot carries the tightest room of its chain, not only
// its own (absent) limits.
func TestRestoreKeepsParentBound(t *testing.T) {
	k := snapKernel(t, snapKey, openJournal(t, filepath.Join(t.TempDir(), "journal.db")))
	type seen struct {
		left    float64
		limited bool
		refused bool
	}
	report := make(chan seen, 1)
	child := func(ctx context.Context, p *kernel.Process) error {
		if !p.Restored() {
			if err := p.Charge(capability.ToolCalls, 3); err != nil {
				return err
			}
			report <- seen{}
			<-ctx.Done()
			return nil
		}
		var s seen
		s.left, s.limited = p.Account().Left(capability.ToolCalls)
		var qe *capability.QuotaError
		s.refused = errors.As(p.Charge(capability.ToolCalls, 6), &qe)
		report <- s
		<-ctx.Done()
		return nil
	}
	if err := k.RegisterImage("child", child); err != nil {
		t.Fatal(err)
	}
	parent, err := k.Spawn(blocker, kernel.SpawnOptions{Image: "parent", Grants: []capability.Grant{{Right: capability.Spawn}}, Quota: capability.Limits{capability.ToolCalls: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Charge(capability.ToolCalls, 2); err != nil {
		t.Fatal(err)
	}
	c, err := parent.Spawn(child, kernel.SpawnOptions{Image: "child"}) // no quota of its own
	if err != nil {
		t.Fatal(err)
	}
	<-report
	s, _, err := k.Snapshot(tctx(t), c.PID(), kernel.SnapshotOptions{Kill: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Restore(s, kernel.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	got := <-report
	if !got.limited || got.left != 5 || !got.refused {
		t.Fatalf("restored child: tool_calls left %v (limited %v), a charge of 6 refused %v; want 5 left (the parent's 10 - 2 - 3) and 6 refused", got.left, got.limited, got.refused)
	}
}

// A snapshot restores once: again on the same kernel, on a new kernel over
// the same journal (a node restart), or through the kernel actor, it is
// refused with ErrNotRestorable; a fork restores a copy and consumes
// nothing.
func TestRestoreOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openJournal(t, path)
	k := snapKernel(t, snapKey, j)
	report := make(chan found, 4)
	p := spawnWorker(t, k, report)
	s, id, err := k.Snapshot(tctx(t), p.PID(), kernel.SnapshotOptions{Kill: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := k.Restore(s, kernel.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRestored(t, <-report)
	// Under another name, so that the name does not refuse it first.
	if _, err := k.Restore(s, kernel.RestoreOptions{Name: "w-again"}); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("second restore: %v, want ErrNotRestorable", err)
	}
	_ = k.Kill(r.PID(), "test")
	<-r.Done()
	c, _ := startKernelActor(t, k)
	if _, _, err := c.Restore(tctx(t), id, ""); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("second restore through the kernel actor: %v, want ErrNotRestorable", err)
	}
	// Another kernel on the same journal (the node restarted) sees it.
	k2 := snapKernel(t, snapKey, j)
	_ = k2.RegisterImage("worker", workerImage(report))
	s2, err := k2.LoadSnapshot(tctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Restore(s2, kernel.RestoreOptions{}); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("restore after a restart: %v, want ErrNotRestorable", err)
	}
	// The operator may fork it, knowingly.
	if _, _, err := c.Fork(tctx(t), id, "w-copy"); err != nil {
		t.Fatalf("fork: %v", err)
	}
	f := <-report
	f.name = "w"
	checkRestored(t, f)
	if meta, err := j.Get("restored-" + s.Key()); err != nil || meta.Kind != kernel.RestoreKind {
		t.Fatalf("the restore's record: %+v %v", meta, err)
	}
}

// A snapshot taken without Kill does not restore while its process runs,
// even under another name, nor on another kernel; a fork does.
func TestRestoreWhileOriginalLives(t *testing.T) {
	k := snapKernel(t, snapKey, openJournal(t, filepath.Join(t.TempDir(), "journal.db")))
	report := make(chan found, 2)
	p := spawnWorker(t, k, report)
	s, _, err := k.Snapshot(tctx(t), p.PID(), kernel.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Restore(s, kernel.RestoreOptions{Name: "w2"}); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("restore while the original runs: %v, want ErrNotRestorable", err)
	}
	k2 := snapKernel(t, snapKey, openJournal(t, filepath.Join(t.TempDir(), "other.db")))
	_ = k2.RegisterImage("worker", workerImage(report))
	d, _ := kernel.DecodeSnapshot(s.Encode())
	if _, err := k2.Restore(d, kernel.RestoreOptions{}); !errors.Is(err, kernel.ErrNotRestorable) {
		t.Fatalf("restore on another kernel of a snapshot taken without kill: %v, want ErrNotRestorable", err)
	}
	if _, err := k.Restore(s, kernel.RestoreOptions{Name: "w2", Fork: true}); err != nil {
		t.Fatalf("fork while the original runs: %v", err)
	}
	f := <-report
	f.name = "w"
	checkRestored(t, f)
}
