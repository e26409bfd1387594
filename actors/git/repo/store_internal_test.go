package repo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// deltaRoot makes a tool root whose packs hold many versions of similar
// blobs and trees, repacked (so delta-compressed), and returns it with the
// hashes of every packed object.
func deltaRoot(t *testing.T) (*Repo, []plumbing.Hash) {
	t.Helper()
	up := filepath.Join(t.TempDir(), "up.git")
	if err := InitBare(up, "main"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := Hydrate(context.Background(), Options{Dir: dir, Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for i := range 40 {
		p := fmt.Sprintf("tools/w%d/r%d.ts", i%4, i/4)
		a := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(a), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(a, []byte(fmt.Sprintf("// %d\n%s\n", i, strings.Repeat("shared padding ", 50+i))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(strings.Repeat(fmt.Sprintf("entry %d\n", i), 2000+i)) /* over 16 KiB: read lazily by go-git */, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Persist(context.Background(), []string{p, "meta.json"}, "write "+p); err != nil {
			t.Fatal(err)
		}
	}
	packs, err := r.sto.ObjectPacks()
	if err != nil {
		t.Fatal(err)
	}
	var all []plumbing.Hash
	for _, p := range packs {
		hs, err := packHashes(filepath.Join(r.gitDir, "objects", "pack", "pack-"+p.String()+".idx"))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, hs...)
	}
	return r, all
}

// TestStoreConcurrentReads is the cause of issue 10's crash: go-git reads
// a store from several goroutines (its packfile encoder runs one delta
// search goroutine per object type when repacking), and go-git's
// filesystem storage shares one pack reader between them. Before the fix,
// two goroutines reading a freshly opened store got "object not found",
// "flate: corrupt input" or the bufio panic "slice bounds out of range
// [:8192] with capacity 4096". Every object must read back with its hash.
func TestStoreConcurrentReads(t *testing.T) {
	r, all := deltaRoot(t)
	for range 10 {
		if err := r.sto.reopen(r.gitDir); err != nil { // empty caches: every read goes to the packs
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				for i := g; i < len(all); i += 2 {
					o, err := r.sto.EncodedObject(plumbing.AnyObject, all[i])
					if err != nil {
						t.Errorf("object %s: %v", all[i], err)
						return
					}
					if h, err := objectHash(o); err != nil || h != all[i] {
						t.Errorf("object %s reads back as %s (%v)", all[i], h, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

// TestRepackEncodeWithDeltas: go-git's encoder with a delta window (what
// repack runs) over delta-compressed packs, from a fresh store each time.
func TestRepackEncodeWithDeltas(t *testing.T) {
	r, all := deltaRoot(t)
	for range 5 {
		if err := r.sto.reopen(r.gitDir); err != nil {
			t.Fatal(err)
		}
		if _, err := packfile.NewEncoder(io.Discard, r.sto, false).Encode(all, 10); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTruncatedPackLeavesNoTemp: a pack cut short (a pusher that died
// mid-push) fails to unpack and leaves no tmp_pack_ file behind (go-git
// leaves its own; issue 10 item 13).
func TestTruncatedPackLeavesNoTemp(t *testing.T) {
	r, all := deltaRoot(t)
	var pack bytes.Buffer
	if _, err := packfile.NewEncoder(&pack, r.sto, false).Encode(all, 0); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "dest.git")
	if err := InitBare(dest, "main"); err != nil {
		t.Fatal(err)
	}
	sto := openStorage(dest)
	defer sto.Close()
	cut := pack.Bytes()[:pack.Len()/2]
	if err := unpack(sto, bytes.NewReader(cut)); err == nil {
		t.Fatal("a truncated pack was accepted")
	}
	if left, _ := filepath.Glob(filepath.Join(dest, "objects", "pack", "tmp_*")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A loose object over largeObjectBytes is returned unread, with its size:
// writeWork refuses a file over Options.MaxFileBytes from that size, so a
// loose blob of any size is never read whole to be refused. Smaller loose
// objects and the content itself read as before.
func TestLargeLooseObjectReadLazily(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"objects/pack", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sto := openStorage(dir)
	big := bytes.Repeat([]byte("x"), largeObjectBytes+1)
	hashes := map[int]plumbing.Hash{}
	for _, content := range [][]byte{big, []byte("small")} {
		o := sto.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, _ := o.Writer()
		w.Write(content)
		w.Close()
		h, err := sto.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		hashes[len(content)] = h
	}
	sto = openStorage(dir)
	for n, h := range hashes {
		o, err := sto.EncodedObject(plumbing.BlobObject, h)
		if err != nil {
			t.Fatal(err)
		}
		_, inMemory := o.(*plumbing.MemoryObject)
		if lazy := n > largeObjectBytes; inMemory == lazy {
			t.Errorf("loose blob of %d bytes: read into memory = %v, want %v", n, inMemory, !lazy)
		}
		if o.Size() != int64(n) {
			t.Errorf("loose blob of %d bytes: Size() = %d", n, o.Size())
		}
		got, err := readObject(o)
		if err != nil || len(got) != n {
			t.Errorf("loose blob of %d bytes: read %d bytes, %v", n, len(got), err)
		}
	}
}
