package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/journal"
)

// SnapshotKind is the journal kind of a snapshot's run (JournalSnapshots).
const SnapshotKind = "snapshot"

// RestoreKind is the journal kind of the run that records a snapshot's
// restore (JournalSnapshots): its id is "restored-" and the snapshot's key
// (Snapshot.Key), so that a second one cannot be begun.
const RestoreKind = "restore"

// JournalSnapshots keeps snapshots in j, on its bbolt file or its
// PostgreSQL tables alike, with no new bucket or table: the sealed bytes
// are stored once by content hash beside the tool sources
// (journal.PutSource, "snapshot:sha256:..."), and a run of kind "snapshot",
// ended at once, names them (RunMeta.Hash) with the process's pid, name and
// image in its arguments. The snapshot id is that run's id: agentos runs
// lists it, agentos restore takes it (or a unique prefix), an export
// (agentos trace --json) carries it, and retention deletes it with the
// other finished runs (retention.keep_days).
//
// A restore is recorded as a run of kind "restore" whose id is
// "restored-<Snapshot.Key>", begun with that id (the journal refuses a
// second run of one id, atomically, on bbolt and PostgreSQL alike) and
// committed before ConsumeSnapshot returns: a snapshot restores once per
// journal.
//
// IMPORTANT: the sealed bytes are kept verbatim (the seal would not verify
// otherwise): the mailbox and the exposed state are NOT redacted like run
// arguments are. Do not send processes credentials you would not keep in
// the journal file (0600, like the rest of .agentos).
func JournalSnapshots(j *journal.Journal) SnapshotStore { return journalSnapshots{j: j} }

type journalSnapshots struct{ j *journal.Journal }

func (s journalSnapshots) SaveSnapshot(_ context.Context, snap *Snapshot) (string, error) {
	b := snap.Encode()
	sum := sha256.Sum256(b)
	hash := "snapshot:sha256:" + hex.EncodeToString(sum[:])
	if err := s.j.PutSource(hash, b); err != nil {
		return "", err
	}
	args, _ := json.Marshal(map[string]any{"pid": uint64(snap.PID), "name": snap.Name, "image": snap.Image, "mailbox": len(snap.Mailbox)})
	tool := snap.Name
	if tool == "" {
		tool = snap.Image
	}
	run, err := s.j.Begin(journal.RunMeta{Kind: SnapshotKind, Tool: tool, Hash: hash, Args: args})
	if err != nil {
		return "", err
	}
	// Durable: committed before the id is handed out (the process may
	// have been killed for it).
	if err := run.Durable().End(journal.StatusOK, nil, nil); err != nil {
		return "", err
	}
	return run.ID(), nil
}

func (s journalSnapshots) LoadSnapshot(_ context.Context, id string) (*Snapshot, error) {
	meta, err := s.j.Get(id)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if meta.Kind != SnapshotKind {
		return nil, fmt.Errorf("%w: run %s is of kind %s, not a snapshot (agentos runs lists snapshots with kind snapshot)", ErrInvalid, meta.ID, meta.Kind)
	}
	b, err := s.j.Source(meta.Hash)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", meta.ID, err)
	}
	return DecodeSnapshot(b)
}

// restoredID is the id of the run that records the restore of key.
func restoredID(key string) string { return "restored-" + key }

func (s journalSnapshots) SnapshotRestored(_ context.Context, key string) (string, bool, error) {
	meta, err := s.j.Get(restoredID(key))
	if errors.Is(err, journal.ErrNoRun) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return fmt.Sprintf("%s at %s", meta.Tool, meta.Started.Format(time.RFC3339)), true, nil
}

func (s journalSnapshots) ConsumeSnapshot(_ context.Context, key, what string) error {
	if _, done, err := s.SnapshotRestored(context.Background(), key); err != nil || done {
		if done {
			return fmt.Errorf("%w: the snapshot %s was restored already (run %s)", ErrNotRestorable, key, restoredID(key))
		}
		return err
	}
	run, err := s.j.Begin(journal.RunMeta{ID: restoredID(key), Kind: RestoreKind, Tool: what})
	if err != nil {
		if _, done, _ := s.SnapshotRestored(context.Background(), key); done {
			return fmt.Errorf("%w: the snapshot %s was restored already, meanwhile (run %s)", ErrNotRestorable, key, restoredID(key))
		}
		return err
	}
	return run.Durable().End(journal.StatusOK, nil, nil)
}
