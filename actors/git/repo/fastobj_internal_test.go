package repo

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// sampleObjects stores in a memory storage a small blob, a blob whose size
// needs a multi-byte pack header, a tree of both and a commit of the tree,
// and returns their hashes.
func sampleObjects(t *testing.T) (*memory.Storage, []plumbing.Hash) {
	t.Helper()
	s := memory.NewStorage()
	put := func(typ plumbing.ObjectType, b []byte) plumbing.Hash {
		o := s.NewEncodedObject()
		o.SetType(typ)
		w, _ := o.Writer()
		_, _ = w.Write(b)
		_ = w.Close()
		h, err := s.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var big strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&big, "line %d of a large tool\n", i*7919%10007)
	}
	small := put(plumbing.BlobObject, []byte("export default () => 1;\n"))
	large := put(plumbing.BlobObject, []byte(big.String()))
	tree := &object.Tree{Entries: []object.TreeEntry{
		{Name: "big.ts", Mode: filemode.Regular, Hash: large},
		{Name: "small.ts", Mode: filemode.Regular, Hash: small},
	}}
	to := s.NewEncodedObject()
	if err := tree.Encode(to); err != nil {
		t.Fatal(err)
	}
	th, _ := s.SetEncodedObject(to)
	sig := object.Signature{Name: "t", Email: "t@example.com"}
	c := &object.Commit{Author: sig, Committer: sig, Message: "m\n", TreeHash: th}
	co := s.NewEncodedObject()
	if err := c.Encode(co); err != nil {
		t.Fatal(err)
	}
	ch, _ := s.SetEncodedObject(co)
	return s, []plumbing.Hash{small, large, th, ch}
}

// content is o's type and bytes.
func content(t *testing.T, o plumbing.EncodedObject) string {
	t.Helper()
	r, err := o.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return o.Type().String() + ":" + string(b)
}

// TestEncodeWholeIsAPack: the pack encoder's output, at BestSpeed and
// stored, parses with go-git's parser and, when git is installed, indexes
// with git index-pack, every object intact.
func TestEncodeWholeIsAPack(t *testing.T) {
	for name, zp := range map[string]*sync.Pool{"best-speed": fastZlib, "stored": storedZlib} {
		t.Run(name, func(t *testing.T) { checkEncodeWhole(t, zp) })
	}
}

func checkEncodeWhole(t *testing.T, zp *sync.Pool) {
	src, hs := sampleObjects(t)
	var pack bytes.Buffer
	if err := encodeWhole(&pack, src, hs, zp); err != nil {
		t.Fatal(err)
	}
	dst := memory.NewStorage()
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(bytes.NewReader(pack.Bytes())), dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(); err != nil {
		t.Fatalf("go-git cannot parse the pack: %v", err)
	}
	for _, h := range hs {
		want, _ := src.EncodedObject(plumbing.AnyObject, h)
		got, err := dst.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatalf("object %s missing from the parsed pack: %v", h, err)
		}
		if content(t, got) != content(t, want) {
			t.Fatalf("object %s changed in the pack", h)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git not installed: the pack is not checked with git index-pack")
		return
	}
	bare := t.TempDir()
	gitOK(t, "", "init", "-q", "--bare", bare)
	cmd := exec.Command("git", "-C", bare, "index-pack", "--stdin")
	cmd.Stdin = bytes.NewReader(pack.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git index-pack refuses the pack: %v\n%s", err, out)
	}
	for _, h := range hs {
		gitOK(t, bare, "cat-file", "-e", h.String())
	}
}

// gitOK runs git (in dir when not empty) and fails the test on error.
func gitOK(t *testing.T, dir string, args ...string) {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
