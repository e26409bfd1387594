package pii

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Pair is one token and the value it stands for.
type Pair struct {
	Token, Value string
}

// Map keeps what each token stands for, for restoring.
//
// IMPORTANT: Put MUST be durable when it returns (the data holding the
// tokens may be journaled right after), and MUST fail with ErrCollision
// when a token it holds already stands for another value; Put and Get MUST
// be safe for concurrent use.
type Map interface {
	// Put records the pairs, all or none.
	Put(pairs ...Pair) error
	// Get returns the value of token, and false when the map lacks it.
	Get(token string) (value string, ok bool, err error)
}

// MemMap is a Map in memory, for tests and for a runtime with nothing to
// restore across restarts.
type MemMap struct{ m sync.Map }

// NewMemMap returns an empty MemMap.
func NewMemMap() *MemMap { return &MemMap{} }

// Put implements Map.
func (m *MemMap) Put(pairs ...Pair) error {
	for _, p := range pairs {
		if v, loaded := m.m.LoadOrStore(p.Token, p.Value); loaded && v.(string) != p.Value {
			return fmt.Errorf("%w: %s stands for two different values; nothing was sent", ErrCollision, p.Token)
		}
	}
	return nil
}

// Get implements Map.
func (m *MemMap) Get(token string) (string, bool, error) {
	v, ok := m.m.Load(token)
	if !ok {
		return "", false, nil
	}
	return v.(string), true, nil
}

// tokensBucket holds token -> value.
var tokensBucket = []byte("tokens")

// BoltMap is a Map in a bbolt file of its own (0600), opened at its first
// use: a replay, which restores nothing, never opens it, so it never waits
// for a serving node that holds it.
type BoltMap struct {
	path string
	mu   sync.Mutex
	db   *bolt.DB
	done bool
}

// OpenBoltMap returns the map kept in the file at path (created at its
// first write, 0600). Close it when done.
func OpenBoltMap(path string) *BoltMap { return &BoltMap{path: path} }

// Path returns the map's file.
func (m *BoltMap) Path() string { return m.path }

func (m *BoltMap) open() (*bolt.DB, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil, ErrClosed
	}
	if m.db != nil {
		return m.db, nil
	}
	db, err := bolt.Open(m.path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s (a node serving this tool root?): stop it, or run through it", ErrMapBusy, m.path)
		}
		return nil, fmt.Errorf("pii: opening the token map %s: %w", m.path, err)
	}
	m.db = db
	return db, nil
}

// Put implements Map: the pairs are on disk when it returns (one
// transaction; concurrent calls share one write).
func (m *BoltMap) Put(pairs ...Pair) error {
	db, err := m.open()
	if err != nil {
		return err
	}
	return db.Batch(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(tokensBucket)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			if old := b.Get([]byte(p.Token)); old != nil {
				if string(old) != p.Value {
					return fmt.Errorf("%w: %s stands for two different values; nothing was sent", ErrCollision, p.Token)
				}
				continue
			}
			if err := b.Put([]byte(p.Token), []byte(p.Value)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Get implements Map.
func (m *BoltMap) Get(token string) (value string, ok bool, err error) {
	db, err := m.open()
	if err != nil {
		return "", false, err
	}
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(tokensBucket); b != nil {
			if v := b.Get([]byte(token)); v != nil {
				value, ok = string(v), true
			}
		}
		return nil
	})
	return value, ok, err
}

// Close closes the file (if it was opened). Later calls fail with
// ErrClosed.
func (m *BoltMap) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done = true
	if m.db == nil {
		return nil
	}
	err := m.db.Close()
	m.db = nil
	return err
}
