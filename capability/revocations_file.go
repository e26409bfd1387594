package capability

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RevocationStore keeps an Authority's durable revocations (Options.Store).
//
// IMPORTANT: Save MUST have the revocations on stable storage when it
// returns nil, and Load MUST return every revocation saved (in any order,
// duplicates allowed): a revocation Load misses is forgotten at the next
// start.
type RevocationStore interface {
	// Load returns every revocation saved.
	Load() ([]Revocation, error)
	// Save adds revocations to the store.
	Save(rs []Revocation) error
}

// ErrStoreBusy: another process kept the revocation file open for longer
// than RevocationFile waits.
var ErrStoreBusy = errors.New("capability: the revocation file is busy")

var (
	bucketRevoked = []byte("revoked")
	bucketMinted  = []byte("minted")
)

// fileWait is how long a RevocationFile waits for another process's
// transaction (the file is opened for each operation, never held).
const fileWait = 5 * time.Second

// RevocationFile is a RevocationStore in a bbolt file at its path (mode
// 0600, created on the first Save), which also records the tokens minted
// for the tool root (RecordMinted, Minted: what 'agentos token list'
// shows). The file is opened for each operation and closed after it, so a
// serving node and an offline 'agentos token revoke' share it; every Save
// is one fsynced transaction.
type RevocationFile string

// revocationRecord is a revocation as the file keeps it.
type revocationRecord struct {
	ID      string `json:"id,omitempty"`
	Holder  string `json:"holder,omitempty"`
	At      int64  `json:"at"`
	Durable bool   `json:"durable,omitempty"`
	Sig     []byte `json:"sig"`
}

// Minted is a token minted for the tool root ('agentos token'), as
// RevocationFile.RecordMinted keeps it: never the token itself.
type Minted struct {
	ID      string    `json:"id"`
	Holder  string    `json:"holder"`
	Grants  []Grant   `json:"grants"`
	At      time.Time `json:"minted"` // when it was minted
	Expires time.Time `json:"expires,omitzero"`
}

// open opens the file (create: creating it and its buckets if missing).
// A missing file without create is (nil, nil).
func (f RevocationFile) open(create bool) (*bolt.DB, error) {
	path := string(f)
	if !create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("capability: the revocation file %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: fileWait, ReadOnly: !create})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s stayed locked by another agentos process for %v; try again", ErrStoreBusy, path, fileWait)
		}
		return nil, fmt.Errorf("capability: opening the revocation file %s: %w", path, err)
	}
	if create {
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketRevoked, bucketMinted} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			db.Close()
			return nil, fmt.Errorf("capability: initialising the revocation file %s: %w", path, err)
		}
	}
	return db, nil
}

// Load returns every revocation in the file (none when it does not exist).
func (f RevocationFile) Load() ([]Revocation, error) {
	var out []Revocation
	err := f.view(bucketRevoked, func(k, v []byte) error {
		var r revocationRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("capability: the revocation file %s has a corrupt record %q (%v): restore the file from a backup, or delete the record's node state and revoke again", string(f), k, err)
		}
		out = append(out, Revocation{ID: r.ID, Holder: r.Holder, At: time.Unix(0, r.At).UTC(), Durable: r.Durable, Sig: r.Sig})
		return nil
	})
	return out, err
}

// Save adds rs to the file in one fsynced transaction. A holder's
// revocation replaces an older one of the same holder.
func (f RevocationFile) Save(rs []Revocation) error {
	if len(rs) == 0 {
		return nil
	}
	return f.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRevoked)
		for _, r := range rs {
			key := "id:" + r.ID
			if r.Holder != "" {
				key = "holder:" + r.Holder
			}
			if prev := b.Get([]byte(key)); prev != nil {
				var p revocationRecord
				if json.Unmarshal(prev, &p) == nil && p.At >= r.At.UnixNano() && (p.Durable || !r.Durable) {
					continue
				}
			}
			v, err := json.Marshal(revocationRecord{ID: r.ID, Holder: r.Holder, At: r.At.UnixNano(), Durable: r.Durable, Sig: r.Sig})
			if err != nil {
				return err
			}
			if err := b.Put([]byte(key), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordMinted records a token minted for the tool root (its id, holder,
// grants and expiry, never its signature).
func (f RevocationFile) RecordMinted(t Token) error {
	m := Minted{ID: t.ID, Holder: t.Holder, Grants: slices.Clone(t.Grants), At: time.Unix(0, t.Issued).UTC()}
	for _, c := range t.Caveats {
		if !c.NotAfter.IsZero() && (m.Expires.IsZero() || c.NotAfter.Before(m.Expires)) {
			m.Expires = c.NotAfter
		}
	}
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return f.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMinted).Put([]byte(t.ID), v) })
}

// Minted returns the tokens RecordMinted recorded, oldest first.
func (f RevocationFile) Minted() ([]Minted, error) {
	var out []Minted
	err := f.view(bucketMinted, func(k, v []byte) error {
		var m Minted
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("capability: the revocation file %s has a corrupt record of minted token %q: %v", string(f), k, err)
		}
		out = append(out, m)
		return nil
	})
	slices.SortStableFunc(out, func(a, b Minted) int { return a.At.Compare(b.At) })
	return out, err
}

func (f RevocationFile) update(fn func(*bolt.Tx) error) error {
	db, err := f.open(true)
	if err != nil {
		return err
	}
	if err := db.Update(fn); err != nil {
		db.Close()
		return fmt.Errorf("capability: writing the revocation file %s: %w", string(f), err)
	}
	return db.Close()
}

func (f RevocationFile) view(bucket []byte, fn func(k, v []byte) error) error {
	db, err := f.open(false)
	if err != nil || db == nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		return b.ForEach(fn)
	})
}
