package repo_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// rawEntry is one entry of a commit made by rawCommit: any mode, as
// anyone who can push to the upstream can make.
type rawEntry struct {
	path    string
	mode    filemode.FileMode
	content string // the blob; for a submodule, the commit hash it names
}

// rawCommit commits ents on top of branch in the bare repository up,
// writing the objects and moving the ref directly (no checks): what a
// hostile pusher can put in a shared upstream.
func rawCommit(t testing.TB, up, branch string, ents []rawEntry, msg string) plumbing.Hash {
	t.Helper()
	sto := filesystem.NewStorage(osfs.New(up), cache.NewObjectLRUDefault())
	defer sto.Close()
	ref, err := sto.Reference(plumbing.NewBranchReferenceName(branch))
	must(t, err)
	parent, err := object.GetCommit(sto, ref.Hash())
	must(t, err)
	ptree, err := parent.Tree()
	must(t, err)
	files := map[string]object.TreeEntry{}
	must(t, ptree.Files().ForEach(func(f *object.File) error {
		files[f.Name] = object.TreeEntry{Name: f.Name, Mode: f.Mode, Hash: f.Hash}
		return nil
	}))
	for _, e := range ents {
		h := plumbing.NewHash(e.content)
		if e.mode != filemode.Submodule {
			o := sto.NewEncodedObject()
			o.SetType(plumbing.BlobObject)
			w, _ := o.Writer()
			_, _ = w.Write([]byte(e.content))
			_ = w.Close()
			h, err = sto.SetEncodedObject(o)
			must(t, err)
		}
		files[e.path] = object.TreeEntry{Name: e.path, Mode: e.mode, Hash: h}
	}
	var build func(prefix string) plumbing.Hash
	build = func(prefix string) plumbing.Hash {
		tree := &object.Tree{}
		dirs := map[string]bool{}
		for p, e := range files {
			if !strings.HasPrefix(p, prefix) {
				continue
			}
			rest := strings.TrimPrefix(p, prefix)
			if name, _, nested := strings.Cut(rest, "/"); nested {
				if !dirs[name] {
					dirs[name] = true
					tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: build(prefix + name + "/")})
				}
				continue
			}
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: rest, Mode: e.Mode, Hash: e.Hash})
		}
		sort.Sort(object.TreeEntrySorter(tree.Entries))
		o := sto.NewEncodedObject()
		must(t, tree.Encode(o))
		h, err := sto.SetEncodedObject(o)
		must(t, err)
		return h
	}
	sig := object.Signature{Name: "pusher", Email: "pusher@example.com", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: build(""), ParentHashes: []plumbing.Hash{parent.Hash}}
	o := sto.NewEncodedObject()
	must(t, c.Encode(o))
	h, err := sto.SetEncodedObject(o)
	must(t, err)
	must(t, sto.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)))
	return h
}

// TestUpstreamLinksRefused is issue 10 item 3 (the Git half): an upstream
// commit with tools/state -> ../.agentos (mode 120000) was checked out by
// Hydrate, and every tool could then read /lib/state/journal.db. Links,
// submodules and any other non-regular mode are refused: never written,
// named (path and reason) in the log and in Refused, and the legitimate
// tools of the same update are checked out.
func TestUpstreamLinksRefused(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			up := newUpstream(t)
			dir := t.TempDir()
			writeFile(t, dir, ".agentos/journal.db", "other runs' I/O")
			var logs syncBuffer
			opt := func(o *repo.Options) { o.Logger = newLogger(&logs) }
			if !fresh {
				r := hydrate(t, dir, up, opt)
				must(t, r.Close())
			}
			rawCommit(t, up, "main", []rawEntry{
				{"tools/state", filemode.Symlink, "../.agentos"},
				{"tools/abs", filemode.Symlink, "/etc"},
				{"tools/sub", filemode.Submodule, "0123456789012345678901234567890123456789"},
				{"tools/ok.ts", filemode.Regular, "export default () => 'ok'"},
			}, "links")
			r := hydrate(t, dir, up, opt)
			if readFile(t, dir, "tools/ok.ts") != "export default () => 'ok'" {
				t.Fatal("the legitimate tool of the update was not checked out")
			}
			for _, p := range []string{"tools/state", "tools/abs", "tools/sub"} {
				if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists in the tool root (%v): it must never be checked out", p, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "tools/state/journal.db")); err == nil {
				t.Fatal("the journal is reachable through tools/state")
			}
			got := map[string]string{}
			for _, rf := range r.Refused() {
				got[rf.Path] = rf.Reason
			}
			if !strings.Contains(got["tools/state"], "symbolic link") || !strings.Contains(got["tools/abs"], "symbolic link") || !strings.Contains(got["tools/sub"], "submodule") {
				t.Fatalf("Refused() = %v", r.Refused())
			}
			for _, p := range []string{"tools/state", "tools/sub"} {
				if !strings.Contains(logs.String(), "path="+p) {
					t.Errorf("the log does not name the refused %s:\n%s", p, logs.String())
				}
			}
			// A write persists, and never brings the refused entries back.
			writeFile(t, dir, "tools/mine.ts", "mine")
			_, err := r.Persist(ctx, []string{"tools/mine.ts"}, "write tools/mine.ts")
			must(t, err)
			if _, err := os.Lstat(filepath.Join(dir, "tools/state")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("tools/state appeared after a Persist")
			}
		})
	}
}

// TestLinksInTheToolRoot: a link already in the tool root (made by a
// previous version's checkout, or by hand) is never committed, never read
// through and never written through.
func TestLinksInTheToolRoot(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "outside the root")
	r := hydrate(t, dir, up)
	must(t, os.MkdirAll(filepath.Join(dir, "tools"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(dir, "tools/out")))
	must(t, os.Symlink("../.agentos", filepath.Join(dir, "tools/state")))
	writeFile(t, dir, ".agentos/journal.db", "journal")

	// Named: an error saying why.
	for _, p := range []string{"tools/out", "tools/out/secret.txt", "tools/state/journal.db"} {
		if _, err := r.Persist(ctx, []string{p}, "write "+p); !errors.Is(err, repo.ErrPath) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Persist(%s) = %v, want ErrPath naming the link", p, err)
		}
	}
	// Under a persisted directory: skipped.
	writeFile(t, dir, "tools/real.ts", "real")
	_, err := r.Persist(ctx, []string{"tools"}, "write tools")
	must(t, err)
	files := upstreamFiles(t, up, "main")
	if files["tools/real.ts"] != "real" {
		t.Fatalf("upstream = %v", files)
	}
	for p := range files {
		if strings.HasPrefix(p, "tools/out") || strings.HasPrefix(p, "tools/state") {
			t.Fatalf("%s was committed through a link", p)
		}
	}
	// The upstream writes under the linked directory: nothing lands outside.
	plainCommit(t, up, "main", map[string]string{"tools/out/evil.ts": "evil", "tools/ok2.ts": "ok2"}, "through the link")
	writeFile(t, dir, "tools/next.ts", "next")
	_, err = r.Persist(ctx, []string{"tools/next.ts"}, "write tools/next.ts")
	must(t, err)
	if _, err := os.Stat(filepath.Join(outside, "evil.ts")); err == nil {
		t.Fatal("the upstream wrote through a link to a directory outside the tool root")
	}
	if readFile(t, dir, "tools/ok2.ts") != "ok2" {
		t.Fatal("the rest of the update was not checked out")
	}
	if !strings.Contains(fmt.Sprint(r.Refused()), "tools/out/evil.ts") {
		t.Fatalf("Refused() = %v, want tools/out/evil.ts", r.Refused())
	}
}

// TestLinkCheckedOutEarlierRemoved: a tool root where an earlier version
// checked out tools/state -> ../.agentos from the upstream gets the link
// removed at the next Hydrate.
func TestLinkCheckedOutEarlierRemoved(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	rawCommit(t, up, "main", []rawEntry{{"tools/state", filemode.Symlink, "../.agentos"}, {"tools/t.ts", filemode.Regular, "t"}}, "link")
	r := hydrate(t, dir, up)
	must(t, r.Close())
	// What the earlier version left.
	must(t, os.Symlink("../.agentos", filepath.Join(dir, "tools/state")))
	hydrate(t, dir, up)
	if _, err := os.Lstat(filepath.Join(dir, "tools/state")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link checked out earlier is still there (%v)", err)
	}
}

// TestNodeConfigNeverFromUpstream is issue 10 item 12: whoever can push
// to the shared upstream switched every node to in-process isolation and
// write_dirs ["."] with an agentos.json. Hydrate never writes agentos.json,
// .agentos/ or .git from the upstream (whatever their case), says so once
// in the log, and Persist never commits them.
func TestNodeConfigNeverFromUpstream(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	const local = `{"isolation":"process","write_dirs":["out"]}`
	writeFile(t, dir, "agentos.json", local)
	var logs syncBuffer
	opt := func(o *repo.Options) { o.Logger = newLogger(&logs) }
	r := hydrate(t, dir, up, opt)
	must(t, r.Close())
	rawCommit(t, up, "main", []rawEntry{
		{"agentos.json", filemode.Regular, `{"isolation":"inprocess","write_dirs":["."]}`},
		{"AGENTOS.JSON", filemode.Regular, `{"isolation":"inprocess"}`},
		{".agentos/journal.db", filemode.Regular, "forged journal"},
		{".Agentos/data.db", filemode.Regular, "forged data"},
		{"tools/t.ts", filemode.Regular, "t"},
	}, "take over the nodes")
	r = hydrate(t, dir, up, opt)
	if got := readFile(t, dir, "agentos.json"); got != local {
		t.Fatalf("agentos.json = %s, want the local one", got)
	}
	for _, p := range []string{"AGENTOS.JSON", ".agentos/journal.db", ".Agentos/data.db"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written from the upstream", p)
		}
	}
	if readFile(t, dir, "tools/t.ts") != "t" {
		t.Fatal("the tool of the same commit was not checked out")
	}
	if n := strings.Count(logs.String(), "never comes from the upstream"); n != 2 { // agentos.json and AGENTOS.JSON, once each
		t.Fatalf("the log says %d times that agentos.json was not taken, want once per file:\n%s", n, logs.String())
	}
	// Another update and a write: no more messages, nothing committed.
	writeFile(t, dir, "agentos.json", `{"isolation":"process"}`)
	writeFile(t, dir, "tools/u.ts", "u")
	_, err := r.Persist(ctx, []string{"tools/u.ts", "agentos.json"}, "write tools/u.ts")
	must(t, err)
	if got := upstreamFiles(t, up, "main")["agentos.json"]; got != `{"isolation":"inprocess","write_dirs":["."]}` {
		t.Fatalf("a node committed its agentos.json: upstream has %s", got)
	}
	if n := strings.Count(logs.String(), "never comes from the upstream"); n != 2 {
		t.Fatalf("said %d times", n)
	}
}

// TestFirstWritePersistsOnlyTheTool is issue 11 item 2: the first
// write_file of tools/math/fib.ts pushed every file already in the tool
// root (a user's data/people.csv, hand-written tools). Files that were in
// the root before its first checkout stay local, across restarts, until a
// write names them.
func TestFirstWritePersistsOnlyTheTool(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	writeFile(t, dir, "data/people.csv", "name\nada\n")
	writeFile(t, dir, "tools/hand.ts", "hand-written")
	writeFile(t, dir, "notes *draft*.md", "notes")
	r := hydrate(t, dir, up)
	writeFile(t, dir, "tools/math/fib.ts", "fib")
	_, err := r.Persist(ctx, []string{"tools/math/fib.ts"}, "write tools/math/fib.ts")
	must(t, err)
	want := func(paths ...string) {
		t.Helper()
		files := upstreamFiles(t, up, "main")
		var got []string
		for p := range files {
			got = append(got, p)
		}
		sort.Strings(got)
		sort.Strings(paths)
		if strings.Join(got, ",") != strings.Join(paths, ",") {
			t.Fatalf("upstream files = %v, want %v", got, paths)
		}
	}
	want("tools/math/fib.ts")
	must(t, r.Close())
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude")); err != nil || !strings.Contains(string(b), "/data/people.csv\n") || !strings.Contains(string(b), "/notes \\*draft\\*.md\n") {
		t.Fatalf("the local files are not in .git/info/exclude (for git status): %q %v", b, err)
	}
	r = hydrate(t, dir, up)
	writeFile(t, dir, "tools/b.ts", "b")
	_, err = r.Persist(ctx, []string{"tools/b.ts"}, "write tools/b.ts")
	must(t, err)
	want("tools/math/fib.ts", "tools/b.ts")
	// Named, a local file is published.
	_, err = r.Persist(ctx, []string{"data/people.csv"}, "write data/people.csv")
	must(t, err)
	want("tools/math/fib.ts", "tools/b.ts", "data/people.csv")
	for _, p := range []string{"data/people.csv", "tools/hand.ts", "notes *draft*.md"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// TestStaleUpstreamTempCleaned is issue 10 item 13: a writer killed
// mid-push left tmp_obj_* in the upstream forever. A push removes those
// older than some minutes (under the upstream's lock) and leaves fresh
// ones (a concurrent git binary's) alone.
func TestStaleUpstreamTempCleaned(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	old := time.Now().Add(-10 * time.Minute)
	packDir := filepath.Join(up, "objects", "pack")
	for _, n := range []string{"tmp_obj_old", "tmp_pack_old", "tmp_obj_fresh"} {
		must(t, os.WriteFile(filepath.Join(packDir, n), []byte("half an object"), 0o644))
		if strings.HasSuffix(n, "old") {
			must(t, os.Chtimes(filepath.Join(packDir, n), old, old))
		}
	}
	writeFile(t, dir, "tools/a.ts", "a")
	_, err := r.Persist(ctx, []string{"tools/a.ts"}, "write tools/a.ts")
	must(t, err)
	for _, n := range []string{"tmp_obj_old", "tmp_pack_old"} {
		if _, err := os.Stat(filepath.Join(packDir, n)); err == nil {
			t.Errorf("%s (10 minutes old) is still in the upstream", n)
		}
	}
	if _, err := os.Stat(filepath.Join(packDir, "tmp_obj_fresh")); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
}

// TestPanicIsAnError: a panic during Git work (here in Regenerate) never
// reaches the process: Persist returns ErrInternal, the stack is logged,
// and the Repo goes on working.
func TestPanicIsAnError(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	var logs syncBuffer
	var boom sync.Mutex
	panicking := false
	r := hydrate(t, dir, up, func(o *repo.Options) {
		o.Logger = newLogger(&logs)
		o.Derived = []string{"meta.json"}
		o.Regenerate = func() error {
			boom.Lock()
			defer boom.Unlock()
			if panicking {
				panic("slice bounds out of range [:8192] with capacity 4096")
			}
			return listTools(dir)()
		}
	})
	boom.Lock()
	panicking = true
	boom.Unlock()
	// Another writer moves the branch: our Persist rebases and regenerates.
	plainCommit(t, up, "main", map[string]string{"tools/theirs.ts": "theirs"}, "theirs")
	writeFile(t, dir, "tools/a.ts", "a")
	_, err := r.Persist(ctx, []string{"tools/a.ts"}, "write tools/a.ts")
	if !errors.Is(err, repo.ErrInternal) || !strings.Contains(err.Error(), "slice bounds") {
		t.Fatalf("Persist = %v, want ErrInternal", err)
	}
	if !strings.Contains(logs.String(), "goroutine") || !strings.Contains(logs.String(), "recovered from a panic") {
		t.Fatalf("the stack is not in the log:\n%s", logs.String())
	}
	boom.Lock()
	panicking = false
	boom.Unlock()
	_, err = r.Persist(ctx, []string{"tools/a.ts"}, "write tools/a.ts")
	must(t, err)
	if files := upstreamFiles(t, up, "main"); files["tools/a.ts"] != "a" || files["tools/theirs.ts"] != "theirs" {
		t.Fatalf("upstream after recovery = %v", files)
	}
}

// TestSharedToolRoot: three Repos (as three processes would) on one tool
// root, persisting at once and re-hydrating in between, take turns under
// the tool root's lock: every write is upstream, the stores are sound.
func TestSharedToolRoot(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	const writers, each = 3, 8
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r, err := repo.Hydrate(ctx, repo.Options{Dir: dir, Upstream: up})
				if err != nil {
					t.Errorf("writer %d: Hydrate: %v", w, err)
					return
				}
				for j := range 2 {
					p := fmt.Sprintf("tools/w%d/t%d-%d.ts", w, i, j)
					writeFile(t, dir, p, p)
					if _, err := r.Persist(ctx, []string{p}, "write "+p); err != nil {
						t.Errorf("%s: %v", p, err)
					}
				}
				if err := r.Close(); err != nil {
					t.Errorf("writer %d: Close: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	files := upstreamFiles(t, up, "main")
	for w := range writers {
		for i := range each {
			for j := range 2 {
				p := fmt.Sprintf("tools/w%d/t%d-%d.ts", w, i, j)
				if files[p] != p {
					t.Errorf("%s is not upstream", p)
				}
			}
		}
	}
	for _, d := range []string{up, filepath.Join(dir, ".git")} {
		problems, err := repo.Verify(d, true)
		must(t, err)
		if len(problems) > 0 {
			t.Errorf("%s: %v", d, problems)
		}
	}
}

// damage helpers for TestRepair.

func packsBySize(t *testing.T, gitDir string) []string {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "pack-*.pack"))
	must(t, err)
	sort.Slice(packs, func(i, j int) bool {
		a, _ := os.Stat(packs[i])
		b, _ := os.Stat(packs[j])
		return a.Size() > b.Size()
	})
	return packs
}

// newestPack returns the most recently written pack.
func newestPack(t *testing.T, gitDir string) string {
	t.Helper()
	packs := packsBySize(t, gitDir)
	sort.Slice(packs, func(i, j int) bool {
		a, _ := os.Stat(packs[i])
		b, _ := os.Stat(packs[j])
		return a.ModTime().After(b.ModTime())
	})
	return packs[0]
}

func flipMiddle(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	for i := len(b) / 2; i < len(b)/2+8 && i < len(b)-20; i++ {
		b[i] ^= 0xff
	}
	must(t, os.WriteFile(path, b, 0o644))
}

// TestRepair: a damaged tool root (a corrupt pack, a pack whose index is
// another's, a truncated pack, a garbage loose object, broken refs) is
// detected at Hydrate and repaired from the upstream; the local commits
// not yet upstream and the uncommitted tool files are not lost. Before,
// every start failed ("object not found").
func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, gitDir string)
	}{
		{"corrupt-old-pack", func(t *testing.T, gitDir string) { flipMiddle(t, packsBySize(t, gitDir)[0]) }},
		{"corrupt-newest-pack", func(t *testing.T, gitDir string) { flipMiddle(t, newestPack(t, gitDir)) }},
		{"truncated-newest-pack", func(t *testing.T, gitDir string) {
			p := newestPack(t, gitDir)
			fi, err := os.Stat(p)
			must(t, err)
			must(t, os.Truncate(p, fi.Size()/2))
		}},
		{"index-of-another-pack", func(t *testing.T, gitDir string) {
			packs := packsBySize(t, gitDir)
			a, b := strings.TrimSuffix(packs[0], ".pack")+".idx", strings.TrimSuffix(packs[len(packs)-1], ".pack")+".idx"
			data, err := os.ReadFile(b)
			must(t, err)
			must(t, os.WriteFile(a, data, 0o644))
		}},
		{"missing-index", func(t *testing.T, gitDir string) {
			must(t, os.Remove(strings.TrimSuffix(packsBySize(t, gitDir)[0], ".pack")+".idx"))
		}},
		{"garbage-loose-object", func(t *testing.T, gitDir string) {
			writeFile(t, gitDir, "objects/ab/cdef0123456789abcdef0123456789abcdef01", "not zlib")
		}},
		{"broken-refs", func(t *testing.T, gitDir string) {
			must(t, os.WriteFile(filepath.Join(gitDir, "packed-refs"), []byte("garbage\x00\xff\n"), 0o644))
		}},
		{"ref-to-missing-commit", func(t *testing.T, gitDir string) {
			must(t, os.WriteFile(filepath.Join(gitDir, "packed-refs"),
				[]byte("0123456789012345678901234567890123456789 refs/heads/main\n0123456789012345678901234567890123456789 refs/remotes/origin/main\n"), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			dir := t.TempDir()
			r := hydrate(t, dir, up)
			for i := range 6 {
				p := fmt.Sprintf("tools/t%d.ts", i)
				writeFile(t, dir, p, strings.Repeat(p, 200))
				_, err := r.Persist(ctx, []string{p}, "write "+p)
				must(t, err)
			}
			// A local commit the upstream never got, and a file never
			// persisted.
			away := up + ".away"
			must(t, os.Rename(up, away))
			must(t, r.Intend("tools/unpushed.ts", []byte("unpushed work"))) // as the git actor's write does
			writeFile(t, dir, "tools/unpushed.ts", "unpushed work")
			if _, err := r.Persist(ctx, []string{"tools/unpushed.ts"}, "write tools/unpushed.ts"); !errors.Is(err, repo.ErrUpstream) {
				t.Fatalf("Persist with the upstream away: %v", err)
			}
			must(t, r.Intend("tools/uncommitted.ts", []byte("uncommitted work"))) // a write killed before its Persist
			must(t, r.Close())
			must(t, os.Rename(away, up))
			writeFile(t, dir, "tools/uncommitted.ts", "uncommitted work")

			tc.damage(t, filepath.Join(dir, ".git"))

			var logs syncBuffer
			r2, err := repo.Hydrate(ctx, repo.Options{Dir: dir, Upstream: up, Logger: newLogger(&logs)})
			if err != nil {
				t.Fatalf("Hydrate of the damaged tool root: %v\n%s", err, logs.String())
			}
			t.Cleanup(func() { r2.Close() })
			if problems, err := repo.Verify(filepath.Join(dir, ".git"), true); err != nil || len(problems) > 0 {
				t.Fatalf("after the repair: %v %v", problems, err)
			}
			if readFile(t, dir, "tools/uncommitted.ts") != "uncommitted work" || readFile(t, dir, "tools/unpushed.ts") != "unpushed work" {
				t.Fatal("the repair lost local work in the working tree")
			}
			writeFile(t, dir, "tools/after.ts", "after")
			_, err = r2.Persist(ctx, []string{"tools/after.ts"}, "write tools/after.ts")
			must(t, err)
			files := upstreamFiles(t, up, "main")
			for i := range 6 {
				p := fmt.Sprintf("tools/t%d.ts", i)
				if files[p] != strings.Repeat(p, 200) {
					t.Errorf("%s upstream = %.20q", p, files[p])
				}
			}
			if files["tools/unpushed.ts"] != "unpushed work" || files["tools/uncommitted.ts"] != "uncommitted work" || files["tools/after.ts"] != "after" {
				t.Fatalf("local work is not upstream after the repair and the next Persist: %v\n%s", files, logs.String())
			}
			if problems, err := repo.Verify(up, true); err != nil || len(problems) > 0 {
				t.Fatalf("upstream: %v %v", problems, err)
			}
			if !bytes.Contains([]byte(logs.String()), []byte("level=WARN")) {
				t.Fatalf("the repair was silent:\n%s", logs.String())
			}
		})
	}
}

// TestRepairDuringPersist: the packs of an open tool root vanish (a
// process that did not take the lock removed them): the next Persist
// finds objects missing, repairs from the upstream and writes.
func TestRepairDuringPersist(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	r := hydrate(t, dir, up)
	for i := range 3 {
		p := fmt.Sprintf("tools/t%d.ts", i)
		writeFile(t, dir, p, p)
		_, err := r.Persist(ctx, []string{p}, "write "+p)
		must(t, err)
	}
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*"))
	must(t, err)
	for _, p := range packs {
		must(t, os.Remove(p))
	}
	writeFile(t, dir, "tools/x.ts", "x")
	if _, err := r.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts"); err != nil {
		t.Fatalf("Persist after the packs vanished: %v", err)
	}
	files := upstreamFiles(t, up, "main")
	for _, p := range []string{"tools/t0.ts", "tools/t1.ts", "tools/t2.ts", "tools/x.ts"} {
		if files[p] == "" {
			t.Errorf("%s is not upstream", p)
		}
	}
	if problems, err := repo.Verify(filepath.Join(dir, ".git"), true); err != nil || len(problems) > 0 {
		t.Fatalf("after the repair: %v %v", problems, err)
	}
}

// TestRepairDuringPersistKeepsUnpushedWork: the pack holding a local
// commit not yet upstream is damaged while the Repo is open. The next
// Persist cannot read the objects to push, repairs (the damaged pack goes
// aside, the upstream is fetched in full, the unreadable commit is dropped
// but its file stays in the working tree) and writes again: the file of
// the lost commit and the new one are both upstream.
func TestRepairDuringPersistKeepsUnpushedWork(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	var logs syncBuffer
	r := hydrate(t, dir, up, func(o *repo.Options) { o.Logger = newLogger(&logs) })
	writeFile(t, dir, "tools/t0.ts", "t0")
	_, err := r.Persist(ctx, []string{"tools/t0.ts"}, "write tools/t0.ts")
	must(t, err)
	away := up + ".away"
	must(t, os.Rename(up, away))
	must(t, r.Intend("tools/unpushed.ts", []byte(strings.Repeat("unpushed work ", 100)))) // as the git actor's write does
	writeFile(t, dir, "tools/unpushed.ts", strings.Repeat("unpushed work ", 100))
	if _, err := r.Persist(ctx, []string{"tools/unpushed.ts"}, "write tools/unpushed.ts"); !errors.Is(err, repo.ErrUpstream) {
		t.Fatalf("Persist with the upstream away: %v", err)
	}
	must(t, os.Rename(away, up))
	flipMiddle(t, newestPack(t, filepath.Join(dir, ".git")))

	writeFile(t, dir, "tools/x.ts", "x")
	if _, err := r.Persist(ctx, []string{"tools/x.ts"}, "write tools/x.ts"); err != nil {
		t.Fatalf("Persist with a damaged pack: %v\n%s", err, logs.String())
	}
	files := upstreamFiles(t, up, "main")
	if files["tools/x.ts"] != "x" || files["tools/t0.ts"] != "t0" || files["tools/unpushed.ts"] != strings.Repeat("unpushed work ", 100) {
		t.Fatalf("upstream after the repair: %v\n%s", files, logs.String())
	}
	if !strings.Contains(logs.String(), "damaged") {
		t.Fatalf("the repair was not logged:\n%s", logs.String())
	}
}
