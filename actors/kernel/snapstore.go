package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agentos-run/agentos/journal"
)

// SnapshotKind is the journal kind of a snapshot's run (JournalSnapshots).
const SnapshotKind = "snapshot"

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
		return nil, fmt.Errorf("%w: run %s is a %s run, not a snapshot (agentos runs lists snapshots with kind snapshot)", ErrInvalid, meta.ID, meta.Kind)
	}
	b, err := s.j.Source(meta.Hash)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", meta.ID, err)
	}
	return DecodeSnapshot(b)
}
