package repo

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/hash"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/utils/ioutil"
)

// Objects this package writes are compressed at zlib.BestSpeed. go-git
// compresses at zlib's default level, which costs four times as much CPU
// for about 5 % fewer bytes: a tree of 10,000 entries (0.4 MB, the tools/
// directory of a large tool root, rewritten by every commit into it) takes
// 22 ms at the default level and 5.7 ms at BestSpeed, and a write_file
// compresses it three times (the local pack, the push, the upstream's
// loose object). Git and go-git read any zlib level.
var fastZlib = zlibPool(zlib.BestSpeed)

// storedZlib writes zlib streams of stored (uncompressed) blocks: for a
// pack that never reaches a network (see sendPack), or that repack will
// soon merge and compress (see store.flush).
var storedZlib = zlibPool(zlib.NoCompression)

func zlibPool(level int) *sync.Pool {
	return &sync.Pool{New: func() any {
		w, _ := zlib.NewWriterLevel(nil, level)
		return w
	}}
}

// encodeWhole writes to w a pack (version 2) of the objects hs of s, each
// whole and compressed by a writer of zp (fastZlib or storedZlib), in the
// order given. It is what go-git's packfile.Encoder writes with a delta
// window of 0 (no delta search, objects read whole), at a quarter of the
// CPU or less.
func encodeWhole(w io.Writer, s storer.EncodedObjectStorer, hs []plumbing.Hash, zp *sync.Pool) error {
	sum := hash.New(hash.CryptoType)
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)
	var head [12]byte
	copy(head[:4], "PACK")
	binary.BigEndian.PutUint32(head[4:8], 2)
	binary.BigEndian.PutUint32(head[8:12], uint32(len(hs)))
	if _, err := bw.Write(head[:]); err != nil {
		return err
	}
	zw := zp.Get().(*zlib.Writer)
	defer zp.Put(zw)
	for _, h := range hs {
		o, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return err
		}
		if err := packEntry(bw, zw, o); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// packEntry writes one whole object as a pack entry: its type and size
// header, then its content compressed by zw.
func packEntry(w io.Writer, zw *zlib.Writer, o plumbing.EncodedObject) error {
	var head [binary.MaxVarintLen64]byte
	size := o.Size()
	c := byte(o.Type())<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size != 0 {
		head[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	head[n] = c
	if _, err := w.Write(head[:n+1]); err != nil {
		return err
	}
	zw.Reset(w)
	if err := copyContent(zw, o); err != nil {
		return err
	}
	return zw.Close()
}

// fastLoose is a filesystem storage whose SetEncodedObject writes loose
// objects compressed at zlib.BestSpeed (go-git's own writer uses the
// default level). Like go-git's, it writes a temporary file
// (objects/pack/tmp_obj_*, which cleanStale removes when a kill leaves
// it) and renames it into place: a reader sees the whole object or none.
type fastLoose struct{ *filesystem.Storage }

// SetEncodedObject stores o as a loose object named by the hash of what
// was written (not by what o claims).
func (f fastLoose) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if o.Type() == plumbing.OFSDeltaObject || o.Type() == plumbing.REFDeltaObject {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	objects := filepath.Join(f.Filesystem().Root(), "objects")
	tmp, h, err := writeLooseTemp(filepath.Join(objects, "pack"), o)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	hex := h.String()
	dir := filepath.Join(objects, hex[:2])
	err = os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, hex[2:]))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// writeLooseTemp writes o's loose encoding ("<type> <size>\0<content>",
// zlib-compressed) to a new temporary file in dir, and returns the file's
// path and the object's hash.
func writeLooseTemp(dir string, o plumbing.EncodedObject) (path string, h plumbing.Hash, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", h, err
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", h, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// The hasher starts with the header; the compressor gets it here.
	sum := plumbing.NewHasher(o.Type(), o.Size())
	zw := fastZlib.Get().(*zlib.Writer)
	defer fastZlib.Put(zw)
	bw := bufio.NewWriterSize(f, 64<<10)
	zw.Reset(bw)
	head := o.Type().String() + " " + strconv.FormatInt(o.Size(), 10) + "\x00"
	if _, err := io.WriteString(zw, head); err != nil {
		return "", h, err
	}
	if err := copyContent(io.MultiWriter(zw, sum), o); err != nil {
		return "", h, err
	}
	if err := errors.Join(zw.Close(), bw.Flush(), f.Close()); err != nil {
		return "", h, err
	}
	return f.Name(), sum.Sum(), nil
}

// copyContent writes o's content to w.
func copyContent(w io.Writer, o plumbing.EncodedObject) (err error) {
	r, err := o.Reader()
	if err != nil {
		return err
	}
	defer ioutil.CheckClose(r, &err)
	_, err = io.Copy(w, r)
	return err
}
