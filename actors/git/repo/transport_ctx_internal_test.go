package repo

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// The in-process transport ends a transfer when its request's context
// ends, although it no longer wraps the pack in go-git's context reader: a
// push whose pack never comes returns the context's error, and a fetch's
// pack stops reading with it.
func TestTransportEndsWithTheContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "up.git")
	if err := InitBare(dir, "main"); err != nil {
		t.Fatal(err)
	}
	ep, err := transport.NewEndpoint(dir)
	if err != nil {
		t.Fatal(err)
	}

	rsess, err := fileTransport{}.NewReceivePackSession(ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rsess.Close()
	pr, pw := io.Pipe() // a pack that never comes
	defer pw.Close()
	req := packp.NewReferenceUpdateRequest()
	req.Packfile = pr
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	ended := make(chan error, 1)
	go func() { _, err := rsess.ReceivePack(ctx, req); ended <- err }()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a push whose context ended: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a push whose context ended is still waiting for its pack")
	}

	head := commitEmptyTree(t, dir)
	usess, err := fileTransport{}.NewUploadPackSession(ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer usess.Close()
	up := packp.NewUploadPackRequest()
	up.Wants = []plumbing.Hash{head}
	ctx, cancel = context.WithCancel(context.Background())
	resp, err := usess.UploadPack(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading a fetch's pack after its context ended: %v, want context.Canceled", err)
	}
	if err := usess.Close(); err != nil {
		t.Fatal(err)
	}
}

// commitEmptyTree stores a commit of the empty tree in the bare dir and
// returns its hash.
func commitEmptyTree(t *testing.T, dir string) plumbing.Hash {
	t.Helper()
	sto := openStorage(dir)
	defer sto.Close()
	tree := sto.NewEncodedObject()
	if err := (&object.Tree{}).Encode(tree); err != nil {
		t.Fatal(err)
	}
	th, err := sto.SetEncodedObject(tree)
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(0, 0)}
	c := sto.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, Message: "empty", TreeHash: th}).Encode(c); err != nil {
		t.Fatal(err)
	}
	h, err := sto.SetEncodedObject(c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
