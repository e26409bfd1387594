package capability

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrLedgerBusy: another process holds the ledger file open (a node serving
// the tool root, or another CLI invocation).
var ErrLedgerBusy = errors.New("capability: the quota ledger is held by another process")

var bucketSpent = []byte("spent")

// FileLedger is a Ledger in a bbolt file: one record per account key, each
// Add one fsynced transaction. One process holds the file at a time (Open
// waits up to two seconds, then fails with ErrLedgerBusy), so use is never
// counted twice by two programs. It is safe for concurrent use.
type FileLedger struct {
	db *bolt.DB
}

// OpenLedger opens, creating it if needed (mode 0600), the ledger file at
// path.
func OpenLedger(path string) (*FileLedger, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s is open in another agentos process (a node serving this tool root?); stop it, or ask the node", ErrLedgerBusy, path)
		}
		return nil, fmt.Errorf("capability: opening the quota ledger %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketSpent)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("capability: initialising the quota ledger %s: %w", path, err)
	}
	return &FileLedger{db: db}, nil
}

// Path returns the ledger's file.
func (l *FileLedger) Path() string { return l.db.Path() }

// Close closes the file.
func (l *FileLedger) Close() error { return l.db.Close() }

func readSpent(b *bolt.Bucket, key string) (map[Meter]float64, error) {
	out := map[Meter]float64{}
	v := b.Get([]byte(key))
	if v == nil {
		return out, nil
	}
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("the ledger's record of %s is corrupt (%v): reset it with 'agentos quota reset %s'", key, err, key)
	}
	return out, nil
}

// Spent returns what key has spent, by meter (empty when nothing).
func (l *FileLedger) Spent(key string) (map[Meter]float64, error) {
	var out map[Meter]float64
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = readSpent(tx.Bucket(bucketSpent), key)
		return err
	})
	return out, err
}

// Add records amount more of m for every key, in one fsynced transaction.
// Use never goes below zero.
func (l *FileLedger) Add(keys []string, m Meter, amount float64) error {
	return l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSpent)
		for _, k := range keys {
			spent, err := readSpent(b, k)
			if err != nil {
				return err
			}
			spent[m] = max(0, spent[m]+amount)
			v, err := json.Marshal(spent)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Spending is one account's record in a ledger.
type Spending struct {
	Account string            `json:"account"`
	Spent   map[Meter]float64 `json:"spent"`
}

// All returns every account's record, by key.
func (l *FileLedger) All() ([]Spending, error) {
	var out []Spending
	err := l.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSpent).ForEach(func(k, _ []byte) error {
			spent, err := readSpent(tx.Bucket(bucketSpent), string(k))
			if err != nil {
				return err
			}
			out = append(out, Spending{Account: string(k), Spent: spent})
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Account < out[j].Account })
	return out, err
}

// Reset forgets what the given accounts spent (none given: every account)
// and returns the keys it cleared. An unknown key is an error naming the
// known ones.
func (l *FileLedger) Reset(keys ...string) ([]string, error) {
	var cleared []string
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSpent)
		if len(keys) == 0 {
			_ = b.ForEach(func(k, _ []byte) error {
				cleared = append(cleared, string(k))
				return nil
			})
		} else {
			for _, k := range keys {
				if b.Get([]byte(k)) == nil {
					var known []string
					_ = b.ForEach(func(k, _ []byte) error { known = append(known, string(k)); return nil })
					return fmt.Errorf("the quota ledger has no account %q (it has: %v)", k, known)
				}
			}
			cleared = keys
		}
		for _, k := range cleared {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
	return cleared, err
}
