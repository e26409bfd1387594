package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// readsOf opens the registry and returns the tool files its Rebuild read.
func (rt *root) readsOf(opts Options) (*Registry, []string) {
	rt.t.Helper()
	var reads []string
	readHook = func(p string) { reads = append(reads, p) }
	defer func() { readHook = nil }()
	r, err := Open(rt.jail, opts)
	if err != nil {
		rt.t.Fatalf("Open: %v", err)
	}
	sort.Strings(reads)
	return r, reads
}

// age sets the modification time of the tool files to an hour ago: files
// made before the last Rebuild, not in the same tick of the clock.
func (rt *root) age(paths ...string) {
	rt.t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(filepath.Join(rt.dir, filepath.FromSlash(p)), old, old); err != nil {
			rt.t.Fatal(err)
		}
	}
}

// TestRebuildReadsOnlyChangedFiles (issue 28 item 4, a later boot grows
// with what changed): a registry opened again reads only the tool files
// changed or added since the last one, keeps the others' entries, and
// sees every change; a damaged stat cache makes it read every file.
func TestRebuildReadsOnlyChangedFiles(t *testing.T) {
	rt := newRoot(t)
	var paths []string
	for i := range 20 {
		p := fmt.Sprintf("tools/g%d/t%02d.ts", i%4, i)
		rt.write(p, fmt.Sprintf("/** Tool %d. @tag n%d */\nexport default function (a: { n: number }): number { return a.n * %d; }\n", i, i, i))
		paths = append(paths, p)
	}
	rt.age(paths...)
	opts := rt.withState(rt.options())
	r, reads := rt.readsOf(opts)
	if len(reads) != 20 {
		t.Fatalf("first open read %d files, want all 20", len(reads))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// Another writer changes one tool and adds one; a third is removed.
	rt.write("tools/g3/t03.ts", "/** Tool 3, faster. @tag fast */\nexport default function (a: { n: number }): number { return a.n + 3; }\n")
	rt.write("tools/g0/new.ts", "/** A new tool. */\nexport default function (): number { return 1; }\n")
	rt.remove("tools/g1/t05.ts")
	r, reads = rt.readsOf(opts)
	if want := []string{"tools/g0/new.ts", "tools/g3/t03.ts"}; !slices.Equal(reads, want) {
		t.Fatalf("second open read %v; want only the changed and new files %v", reads, want)
	}
	if tl, ok := r.Get("tools/g3/t03.ts"); !ok || tl.Version != 2 || !slices.Contains(tl.Tags, "fast") {
		t.Errorf("the changed tool: %+v, want version 2 with its new tag", tl)
	}
	if _, ok := r.Get("tools/g0/new.ts"); !ok {
		t.Error("the new tool is not registered")
	}
	if _, ok := r.Get("tools/g1/t05.ts"); ok {
		t.Error("the removed tool is still registered")
	}
	if tl, ok := r.Get("tools/g2/t02.ts"); !ok || tl.Version != 1 || tl.Hash == "" {
		t.Errorf("an unchanged tool: %+v", tl)
	}
	if hits := r.Search("fast", 5); len(hits) == 0 || hits[0].Tool.Path != "tools/g3/t03.ts" {
		t.Errorf("search after a cached rebuild: %+v", hits)
	}
	checkInvariants(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// A file changed with its size and modification time kept is still
	// seen (its change time moved).
	p := "tools/g2/t02.ts"
	full := filepath.Join(rt.dir, filepath.FromSlash(p))
	fi, _ := os.Stat(full)
	b, _ := os.ReadFile(full)
	b[len(b)-5] = '7' // "* 2; }" -> "* 7; }": same size
	if err := os.WriteFile(full, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(full, fi.ModTime(), fi.ModTime())
	r, reads = rt.readsOf(opts)
	if !slices.Contains(reads, p) {
		t.Errorf("a same-size rewrite with its mtime restored was not read: %v", reads)
	}
	if tl, _ := r.Get(p); tl.Version != 2 {
		t.Errorf("the rewritten tool: version %d, want 2", tl.Version)
	}
	r.Close()

	// A damaged cache: every file is read, nothing fails.
	if err := os.WriteFile(filepath.Join(rt.dir, ".agentos", DefaultStatFile), []byte("agentos-registry-stat 1 x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, reads = rt.readsOf(opts)
	if len(reads) != 20 {
		t.Errorf("with a damaged cache %d files were read, want all 20", len(reads))
	}
	r.Close()
}

// TestSeedSparesReadingCheckedOutFiles (issue 28 goal 4, a fresh boot): a
// registry opened with a Seed from the writer of the tool files (the Git
// checkout of a fresh tool root) reads none of the files the seed knows
// with their stat unchanged, and still reads the files changed after the
// seed learnt them and those it never knew; every entry is right.
func TestSeedSparesReadingCheckedOutFiles(t *testing.T) {
	rt := newRoot(t)
	src := func(i int, how string) string {
		return fmt.Sprintf("/** Tool %d %s. @tag n%d */\nexport default function (a: { n: number }): number { return a.n * %d; }\n", i, how, i, i)
	}
	var paths []string
	for i := range 10 {
		p := fmt.Sprintf("tools/g%d/t%02d.ts", i%2, i)
		rt.write(p, src(i, "first"))
		paths = append(paths, p)
	}
	// The upstream's registry (its shards), as a fresh root finds it.
	r, err := Open(rt.jail, rt.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	seed := NewSeed()
	for i, p := range paths {
		fi, err := os.Lstat(filepath.Join(rt.dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		seed.Wrote(p, []byte(src(i, "first")), fi)
	}
	rt.write("tools/g1/t03.ts", src(3, "changed after the checkout")) // another size
	rt.write("tools/g0/t99.ts", src(99, "unknown to the seed"))
	opts := rt.withState(rt.options())
	opts.Seed = seed
	r, reads := rt.readsOf(opts)
	defer r.Close()
	if want := []string{"tools/g0/t99.ts", "tools/g1/t03.ts"}; !slices.Equal(reads, want) {
		t.Fatalf("a seeded open read %v; want only the file changed since the seed and the one it never knew: %v", reads, want)
	}
	if tl, ok := r.Get("tools/g1/t03.ts"); !ok || tl.Version != 2 || !strings.Contains(tl.Description, "changed") {
		t.Errorf("the tool changed after the checkout: %+v, want version 2 with its new description", tl)
	}
	if tl, ok := r.Get("tools/g0/t04.ts"); !ok || tl.Version != 1 || !strings.Contains(tl.Description, "first") {
		t.Errorf("a seeded tool: %+v", tl)
	}
	if _, ok := r.Get("tools/g0/t99.ts"); !ok {
		t.Error("the tool the seed never knew is not registered")
	}
	if got := len(r.List()); got != 11 {
		t.Errorf("the registry lists %d tools, want 11", got)
	}
}

// TestFreshFilesAreVerifiedOnceSettled: files written just before a
// registry opened are too recent for its stat cache to vouch for; once
// they have settled the registry checks them itself, so that the next
// open reads none of them (a node restarted soon after its first
// checkout read every tool again). A file changed before that check, even
// to the same size, is still read.
func TestFreshFilesAreVerifiedOnceSettled(t *testing.T) {
	defer func(d time.Duration) { statRacy = d }(statRacy)
	statRacy = 200 * time.Millisecond
	rt := newRoot(t)
	var paths []string
	for i := range 6 {
		p := fmt.Sprintf("tools/t%d.ts", i)
		rt.write(p, fmt.Sprintf("/** Tool %d. */\nexport default function (a: { n: number }): number { return a.n * %d; }\n", i, i))
		paths = append(paths, p)
	}
	opts := rt.withState(rt.options())
	r, reads := rt.readsOf(opts)
	if len(reads) != len(paths) {
		t.Fatalf("first open read %d files, want %d", len(reads), len(paths))
	}
	// Changed before the check: same size, new content.
	rt.write(paths[0], strings.Replace(readFile(t, rt, paths[0]), "* 0", "* 9", 1))
	time.Sleep(statRacy + statRacy/4 + 300*time.Millisecond) // the check runs
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, reads = rt.readsOf(opts)
	defer r.Close()
	if !slices.Equal(reads, paths[:1]) {
		t.Errorf("the open after the check read %q, want only the changed %q", reads, paths[0])
	}
	if got, _ := r.Get(paths[0]); got.Version != 2 {
		t.Errorf("the changed tool: %+v, want version 2", got)
	}
}

func readFile(t *testing.T, rt *root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rt.dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
