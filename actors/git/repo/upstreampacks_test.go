package repo_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestUpstreamKeepsPushesAsPacks: a local upstream stores each push as the
// pack it arrived in (no loose object is created) and merges its packs as
// they pile up; every pushed tool stays readable, by go-git and by git.
func TestUpstreamKeepsPushesAsPacks(t *testing.T) {
	up := newUpstream(t)
	loose := looseObjects(t, up)
	push := pusher(t, up)
	const writes = 3 * repo.MaxPacks
	for i := range writes {
		push(i)
	}
	if got := looseObjects(t, up); got != loose {
		t.Fatalf("%d loose objects in the upstream after %d pushes, want %d (InitBare's)", got, writes, loose)
	}
	if n := len(packsOf(t, up)); n > repo.MaxPacks+1 {
		t.Fatalf("%d packs in the upstream after %d pushes: they were not merged", n, writes)
	}
	files := upstreamFiles(t, up, "main")
	for i := range writes {
		if p := fmt.Sprintf("tools/t%d.ts", i); files[p] != p {
			t.Fatalf("%s upstream = %q", p, files[p])
		}
	}
	if problems, err := repo.Verify(up, true); err != nil || len(problems) > 0 {
		t.Fatalf("Verify(upstream) = %v, %v", problems, err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git not installed: the upstream is not checked with git fsck")
		return
	}
	if out, err := exec.Command("git", "-C", up, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck of the upstream: %v\n%s", err, out)
	}
}

// TestUpstreamMergeWaitsForReaders: while a fetch from the upstream reads
// its objects (an upload session sending a pack), pushes leave its packs
// as they are, and the fetch reads every object it was offered; the first
// push after it ends merges them. An advertisement alone (Behind's, a
// fetch's first step) holds nothing back: the objects are read, under the
// lock, from the packs there when the objects are asked for.
func TestUpstreamMergeWaitsForReaders(t *testing.T) {
	up := newUpstream(t)
	push := pusher(t, up)
	for i := range repo.MaxPacks {
		push(i)
	}
	sess, head := openUpload(t, up)
	for i := repo.MaxPacks; i < 2*repo.MaxPacks; i++ {
		push(i) // merges: the session has only advertised
	}
	if n := len(packsOf(t, up)); n > repo.MaxPacks+1 {
		t.Fatalf("%d packs: an advertisement held back the merge of the upstream's packs", n)
	}
	req := packp.NewUploadPackRequest()
	req.Wants = []plumbing.Hash{head}
	resp, err := sess.UploadPack(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2 * repo.MaxPacks; i < 4*repo.MaxPacks; i++ {
		push(i)
	}
	if n := len(packsOf(t, up)); n <= repo.MaxPacks+1 {
		t.Fatalf("%d packs: the upstream's packs were merged while a fetch was reading them", n)
	}
	if _, err := io.Copy(io.Discard, resp); err != nil {
		t.Fatalf("the fetch begun before the pushes: %v", err)
	}
	must(t, resp.Close())
	must(t, sess.Close())
	push(4 * repo.MaxPacks)
	if n := len(packsOf(t, up)); n > repo.MaxPacks+1 {
		t.Fatalf("%d packs after the fetch ended and a push: not merged", n)
	}
}

// pusher hydrates a tool root on up and returns a function that writes
// and persists tools/t<i>.ts (its own path as content), one push each.
func pusher(t *testing.T, up string) func(i int) {
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	return func(i int) {
		t.Helper()
		p := fmt.Sprintf("tools/t%d.ts", i)
		writeFile(t, dir, p, p)
		if _, err := r.Persist(ctx, []string{p}, "write "+p); err != nil {
			t.Fatal(err)
		}
	}
}

// openUpload opens an upload session (a fetch) on the local repository
// up, closed at the end of the test, and returns main's head as it
// advertised it.
func openUpload(t *testing.T, up string) (transport.UploadPackSession, plumbing.Hash) {
	t.Helper()
	repo.InstallTransport()
	ep, err := transport.NewEndpoint(up)
	must(t, err)
	c, err := client.NewClient(ep)
	must(t, err)
	sess, err := c.NewUploadPackSession(ep, nil)
	must(t, err)
	t.Cleanup(func() { _ = sess.Close() })
	ar, err := sess.AdvertisedReferences()
	must(t, err)
	refs, err := ar.AllReferences()
	must(t, err)
	ref, ok := refs[plumbing.NewBranchReferenceName("main")]
	if !ok {
		t.Fatal("main not advertised")
	}
	return sess, ref.Hash()
}

// packsOf lists the packs of the git directory gitDir.
func packsOf(t *testing.T, gitDir string) []string {
	t.Helper()
	out, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "pack-*.pack"))
	must(t, err)
	return out
}

// looseObjects counts the loose objects of the git directory gitDir.
func looseObjects(t *testing.T, gitDir string) int {
	t.Helper()
	n := 0
	ents, err := os.ReadDir(filepath.Join(gitDir, "objects"))
	must(t, err)
	for _, e := range ents {
		if !e.IsDir() || len(e.Name()) != 2 || strings.Trim(e.Name(), "0123456789abcdef") != "" {
			continue
		}
		objs, err := os.ReadDir(filepath.Join(gitDir, "objects", e.Name()))
		must(t, err)
		n += len(objs)
	}
	return n
}

const fetchChildEnv = "AGENTOS_REPO_FETCH_CHILD"

// fetchChild runs in a child process (see TestMain): until its standard
// input closes, it checks out the upstream into a new tool root, again
// and again, and prints "fetched N" (N files) or "error ...".
func fetchChild() {
	up, base := os.Getenv("AGENTOS_REPO_FETCH_UP"), os.Getenv("AGENTOS_REPO_FETCH_DIR")
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		dir := filepath.Join(base, fmt.Sprint(i))
		r, err := repo.Hydrate(context.Background(), repo.Options{Dir: dir, Upstream: up})
		if err != nil {
			fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
			os.Exit(2)
		}
		n := 0
		_ = filepath.WalkDir(filepath.Join(dir, "tools"), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		_ = r.Close()
		_ = os.RemoveAll(dir)
		fmt.Println("fetched", n)
	}
}

// TestFetchesInAnotherProcessDuringMerges: a process checking out the
// upstream again and again while this one pushes (and so merges the
// upstream's packs) never fails a fetch: no pack is deleted under it.
func TestFetchesInAnotherProcessDuringMerges(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	up := newUpstream(t)
	push := pusher(t, up)
	push(0)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fetchChildEnv+"=1", "AGENTOS_REPO_FETCH_UP="+up, "AGENTOS_REPO_FETCH_DIR="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	must(t, err)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	const writes = 6 * repo.MaxPacks
	for i := 1; i <= writes; i++ {
		push(i)
	}
	_ = stdin.Close()
	err = cmd.Wait()
	text := out.String()
	fetched := strings.Count(text, "fetched ")
	t.Logf("%d checkouts in the other process during %d pushes", fetched, writes)
	if err != nil || strings.Contains(text, "error") {
		t.Fatalf("the fetching process: %v\n%s", err, text)
	}
	if fetched == 0 {
		t.Fatalf("the other process fetched nothing during the pushes:\n%s", text)
	}
}
