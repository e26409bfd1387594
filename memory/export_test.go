package memory

import (
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SetFormatForTest rewrites the format of the file at path.
func SetFormatForTest(path string, format int) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte(strconv.Itoa(format)))
	})
}

// WriteTxForTest is how many write transactions s's file has committed.
func WriteTxForTest(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return 0
	}
	st := s.db.Stats()
	return int(st.TxStats.GetWrite())
}
