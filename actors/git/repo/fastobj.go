package repo

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"io"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/hash"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/utils/ioutil"
)

// Objects this package writes are compressed at zlib.BestSpeed. go-git
// compresses at zlib's default level, which costs four times as much CPU
// for about 5 % fewer bytes: a tree of 10,000 entries (0.4 MB, the tools/
// directory of a large tool root, rewritten by every commit into it) takes
// 22 ms at the default level and 5.7 ms at BestSpeed. A write_file into a
// local upstream stores it uncompressed (see storedZlib) and compresses it
// when merging packs. Git and go-git read any zlib level.
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
