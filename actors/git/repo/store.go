package repo

import (
	"errors"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// store is a tool root's object store: go-git's filesystem storage plus the
// objects made since the last flush, kept in memory. flush writes them as
// one pack (one file and its index, renamed into place) instead of one
// loose file each: creating files, and the fan-out directories loose
// objects live in, is the expensive part of a commit on many filesystems.
// IMPORTANT: flush before a ref points at a new object (saveRefs does).
type store struct {
	*filesystem.Storage
	mem map[plumbing.Hash]plumbing.EncodedObject
}

func newStore(gitDir string) *store {
	return &store{Storage: openStorage(gitDir), mem: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// NewEncodedObject returns an in-memory object.
func (s *store) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject keeps the object in memory until flush.
func (s *store) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if o.Type() == plumbing.OFSDeltaObject || o.Type() == plumbing.REFDeltaObject {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	h := o.Hash()
	s.mem[h] = o
	return h, nil
}

// EncodedObject reads memory first, then the disk.
func (s *store) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := s.mem[h]; ok {
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	return s.Storage.EncodedObject(t, h)
}

// HasEncodedObject looks in memory, then on disk.
func (s *store) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.mem[h]; ok {
		return nil
	}
	return s.Storage.HasEncodedObject(h)
}

// EncodedObjectSize looks in memory, then on disk.
func (s *store) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := s.mem[h]; ok {
		return o.Size(), nil
	}
	return s.Storage.EncodedObjectSize(h)
}

// flush writes the in-memory objects to disk as one pack.
func (s *store) flush() error {
	if len(s.mem) == 0 {
		return nil
	}
	hs := make([]plumbing.Hash, 0, len(s.mem))
	for h := range s.mem {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].String() < hs[j].String() })
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return err
	}
	_, encErr := packfile.NewEncoder(w, s, false).Encode(hs, 0)
	if err := errors.Join(encErr, w.Close()); err != nil {
		return err
	}
	clear(s.mem)
	return nil
}
