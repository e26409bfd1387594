package repo

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

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
//
// Concurrency. go-git's filesystem storage is NOT safe for concurrent use:
// with MaxOpenDescriptors it keeps one open *packfile.Packfile per pack,
// whose Scanner (a bufio.Reader over the file, and the seek position) every
// read of that pack shares; two goroutines reading the same pack interleave
// their seeks and reads and get another object's bytes ("object not found",
// "flate: corrupt input"), or overrun the bufio.Reader ("slice bounds out of
// range [:8192] with capacity 4096": issue 10's crash). go-git itself reads
// a store from several goroutines: packfile.Encoder with a delta window
// (repack) runs one deltaSelector.walk goroutine per object type, each
// calling EncodedObject to restore delta bases. So every read of the
// embedded storage goes through s.mu; the objects returned are in memory,
// or FSObjects that open their own file (wrapped so that a panic while
// reading one becomes an error).
type store struct {
	*filesystem.Storage
	mu  sync.Mutex // guards Storage's object reads and mem
	mem map[plumbing.Hash]plumbing.EncodedObject
	log *slog.Logger // where recovered panics are logged (nil: in the error)

	trees treeCache // decoded trees, by hash
}

func newStore(gitDir string, log *slog.Logger) *store {
	return &store{Storage: openStorage(gitDir), mem: map[plumbing.Hash]plumbing.EncodedObject{}, log: log}
}

// NewEncodedObject returns an in-memory object.
func (s *store) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject keeps the object in memory until flush.
func (s *store) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if o.Type() == plumbing.OFSDeltaObject || o.Type() == plumbing.REFDeltaObject {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	h := o.Hash()
	s.mu.Lock()
	s.mem[h] = o
	s.mu.Unlock()
	return h, nil
}

// EncodedObject reads memory first, then the disk.
func (s *store) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (o plumbing.EncodedObject, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.mem[h]; ok {
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	defer recoverInto(&err, s.log, "reading object "+h.String())
	o, err = s.Storage.EncodedObject(t, h)
	return s.guard(o), err
}

// DeltaObject is EncodedObject that may return a pack's delta as is (what
// the packfile encoder reuses).
func (s *store) DeltaObject(t plumbing.ObjectType, h plumbing.Hash) (o plumbing.EncodedObject, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.mem[h]; ok {
		return o, nil
	}
	defer recoverInto(&err, s.log, "reading object "+h.String())
	o, err = s.Storage.DeltaObject(t, h)
	return s.guard(o), err
}

// HasEncodedObject looks in memory, then on disk.
func (s *store) HasEncodedObject(h plumbing.Hash) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mem[h]; ok {
		return nil
	}
	defer recoverInto(&err, s.log, "looking up object "+h.String())
	return s.Storage.HasEncodedObject(h)
}

// EncodedObjectSize looks in memory, then on disk.
func (s *store) EncodedObjectSize(h plumbing.Hash) (n int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.mem[h]; ok {
		return o.Size(), nil
	}
	defer recoverInto(&err, s.log, "sizing object "+h.String())
	return s.Storage.EncodedObjectSize(h)
}

// reopen drops the storage's caches (pack indexes, open packs) and opens
// it again: after another process or a repack changed the packs.
func (s *store) reopen(gitDir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.Storage.Close()
	s.Storage = openStorage(gitDir)
	return err
}

// storedPackMax bounds the objects a flush writes uncompressed.
const storedPackMax = 4 << 20

// flush writes the in-memory objects to disk as one pack: uncompressed
// (stored zlib blocks) when they are at most storedPackMax bytes, as a
// commit's are. Compressing them is work thrown away: repack merges the
// pack with the next ones within maxPacks flushes, and compresses what it
// writes. A commit into a directory of 10,000 tools spent 3 ms compressing
// its 0.4 MB tree, and 2 ms more inflating it to index the pack.
func (s *store) flush() error {
	s.mu.Lock()
	hs := make([]plumbing.Hash, 0, len(s.mem))
	size := int64(0)
	for h, o := range s.mem {
		hs = append(hs, h)
		size += o.Size()
	}
	s.mu.Unlock()
	if len(hs) == 0 {
		return nil
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].String() < hs[j].String() })
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return err
	}
	zp := fastZlib
	if size <= storedPackMax {
		zp = storedZlib
	}
	encErr := encodeWhole(w, s, hs, zp)
	if err := errors.Join(encErr, w.Close()); err != nil {
		return err
	}
	s.mu.Lock()
	for _, h := range hs {
		delete(s.mem, h)
	}
	s.mu.Unlock()
	return nil
}

// guard wraps an object that reads its content lazily from a pack (a
// go-git FSObject, for objects over 16 KiB) so that opening its content
// takes the store's lock too (it decodes from the pack, through go-git
// state shared with the store: the pack's index, the object cache) and a
// panic while reading it (a damaged pack) is an error. Delta objects and
// in-memory objects are returned as they are (the packfile encoder
// type-asserts deltas).
func (s *store) guard(o plumbing.EncodedObject) plumbing.EncodedObject {
	if f, ok := o.(*packfile.FSObject); ok {
		return guardedObject{f, s}
	}
	return o
}

type guardedObject struct {
	*packfile.FSObject
	s *store
}

func (g guardedObject) Reader() (rc io.ReadCloser, err error) {
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	defer recoverInto(&err, g.s.log, "reading object "+g.Hash().String())
	rc, err = g.FSObject.Reader()
	if err != nil {
		return nil, err
	}
	return guardedReader{rc}, nil
}

type guardedReader struct{ io.ReadCloser }

func (g guardedReader) Read(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, fmt.Errorf("%w: reading an object: %v", ErrInternal, v)
		}
	}()
	return g.ReadCloser.Read(p)
}
