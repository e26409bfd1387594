package registry

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/binform"
)

// snapTools writes n tools with descriptions, tags and parameters.
func (rt *root) snapTools(n int) []string {
	var paths []string
	for i := range n {
		p := fmt.Sprintf("tools/g%d/t%03d.ts", i%7, i)
		rt.write(p, fmt.Sprintf("/**\n * Computes figure %d of the %s series.\n * @tag series, s%d\n */\nexport default function (a: { start: number; count: number }): number { return a.start * %d + a.count; }\n", i, []string{"fibonacci", "prime", "square"}[i%3], i%5, i))
		paths = append(paths, p)
	}
	rt.age(paths...)
	return paths
}

// fixedNow gives every open the same clock, so that two opens of copies of
// one root register new tools alike.
func (rt *root) fixedNow(opts Options) Options {
	opts.Now = func() time.Time { return epoch }
	return opts
}

// view is what a registry answers: its entries and some searches.
func view(t *testing.T, r *Registry) (string, [][]Hit) {
	t.Helper()
	b, err := json.Marshal(r.List())
	if err != nil {
		t.Fatal(err)
	}
	var hits [][]Hit
	for _, q := range []string{"fibonacci series", "prime figure", "square", "s3", "computes figure 12", "brand new thing", "renamed"} {
		hits = append(hits, r.Search(q, 50))
	}
	return string(b), hits
}

// parsesOf opens the registry and returns the shard files its Rebuild
// decoded from JSON (the others came from the snapshot).
func (rt *root) parsesOf(opts Options) (*Registry, []string) {
	rt.t.Helper()
	var parsed []string
	parseHook = func(f string) { parsed = append(parsed, f) }
	defer func() { parseHook = nil }()
	r, err := Open(rt.jail, opts)
	if err != nil {
		rt.t.Fatalf("Open: %v", err)
	}
	sort.Strings(parsed)
	return r, parsed
}

// closeChecked checks the registry's invariants and closes it.
func closeChecked(t *testing.T, r *Registry) {
	t.Helper()
	checkInvariants(t, r)
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// sameView fails unless the registry answers as want (view's).
func sameView(t *testing.T, r *Registry, wantList string, wantHits [][]Hit, what string) {
	t.Helper()
	gotList, gotHits := view(t, r)
	if gotList != wantList {
		t.Errorf("%s: List differs:\n%s\nwant\n%s", what, gotList, wantList)
	}
	for i := range wantHits { // as JSON: a tool's parameters read from a shard keep its indentation
		g, _ := json.Marshal(gotHits[i])
		w, _ := json.Marshal(wantHits[i])
		if string(g) != string(w) {
			t.Errorf("%s: search %d:\n%s\nwant\n%s", what, i, g, w)
		}
	}
}

// copyRoot copies the tool root, without the registry's snapshot and stat
// cache: a root that starts from the files alone.
func (rt *root) copyRoot() *root {
	rt.t.Helper()
	c := newRoot(rt.t)
	if err := os.CopyFS(c.dir, os.DirFS(rt.dir)); err != nil {
		rt.t.Fatal(err)
	}
	for _, f := range []string{DefaultSnapshotFile, DefaultStatFile} {
		os.Remove(filepath.Join(c.dir, ".agentos", f))
	}
	c.warn = rt.warn
	return c
}

// TestSnapshotStartIsAFullStart (issue 28 goal 4): a registry started from
// its snapshot, after tools were changed, added and removed and a shard
// was rewritten by another writer while it was stopped, answers List and
// Search exactly as one started from the files alone, and decodes from
// JSON only the shard that changed.
func TestSnapshotStartIsAFullStart(t *testing.T) {
	rt := newRoot(t)
	rt.snapTools(40)
	opts := rt.fixedNow(rt.withState(rt.options()))
	r, _ := rt.parsesOf(opts)
	for range 3 {
		r.Used("tools/g1/t001.ts")
	}
	if _, err := r.Register("tools/g2/added.ts", []byte("/** Adds a renamed figure. @tag extra */\nexport default function (): number { return 1; }\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rt.dir, ".agentos", DefaultSnapshotFile)); err != nil {
		t.Fatalf("Close wrote no snapshot: %v", err)
	}

	// While it is stopped: a tool changed (its description), one added,
	// one removed, and another writer (a Git merge) gives a tool usage in
	// its shard.
	rt.write("tools/g3/t003.ts", "/** Renamed: computes the brand new thing. @tag fresh */\nexport default function (): number { return 3; }\n")
	rt.write("tools/g4/t999.ts", "/** A brand new thing of figures. */\nexport default function (): number { return 9; }\n")
	rt.remove("tools/g5/t005.ts")
	f := rt.shard("tools/g6/t006.ts")
	var doc struct {
		Tools map[string]*Tool `json:"tools"`
	}
	b, _ := os.ReadFile(f)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc.Tools["tools/g6/t006.ts"].Usage = 77
	b, _ = json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}

	full := rt.copyRoot()
	fr, _ := full.parsesOf(full.fixedNow(full.withState(full.options())))
	wantList, wantHits := view(t, fr)
	closeChecked(t, fr)

	r, parsed := rt.parsesOf(opts)
	defer closeChecked(t, r)
	if want := []string{shardPath("meta", shardOf("tools/g6/t006.ts"))}; !slices.Equal(parsed, want) {
		t.Errorf("decoded from JSON %v; want only the rewritten shard %v", parsed, want)
	}
	sameView(t, r, wantList, wantHits, "from the snapshot")
	if tl, _ := r.Get("tools/g6/t006.ts"); tl.Usage != 77 {
		t.Errorf("the other writer's usage: %d, want 77", tl.Usage)
	}
	if hits := r.Search("fibonacci series", 50); slices.ContainsFunc(hits, func(h Hit) bool { return h.Path == "tools/g5/t005.ts" }) {
		t.Error("a removed tool is still found")
	}
	if n := rt.warn.count(); n != 0 {
		t.Errorf("%d warnings: %v", n, rt.warn.msgs)
	}
}

// TestSnapshotDamagedIsIgnored: a snapshot damaged in any byte, cut short,
// or written for another tools directory is ignored (logged when damaged)
// and the registry is what the files alone give.
func TestSnapshotDamagedIsIgnored(t *testing.T) {
	rt := newRoot(t)
	rt.snapTools(12)
	opts := rt.fixedNow(rt.withState(rt.options()))
	r, _ := rt.parsesOf(opts)
	wantList, wantHits := view(t, r)
	closeChecked(t, r)
	file := filepath.Join(rt.dir, ".agentos", DefaultSnapshotFile)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"a flipped byte": func() []byte { b := slices.Clone(good); b[len(b)/2] ^= 1; return b }(),
		"cut short":      good[:len(good)/3],
		"empty":          {},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			before := rt.warn.count()
			r, parsed := rt.parsesOf(opts)
			if len(parsed) == 0 {
				t.Error("no shard decoded from JSON: the damaged snapshot was used")
			}
			if rt.warn.count() == before {
				t.Error("no warning for a damaged snapshot")
			}
			sameView(t, r, wantList, wantHits, "after a damaged snapshot")
			closeChecked(t, r)
		})
	}
	t.Run("another tools directory", func(t *testing.T) {
		o := opts
		o.ToolsDir = "tools/g1"
		r, parsed := rt.parsesOf(o)
		if len(parsed) == 0 {
			t.Error("no shard decoded from JSON: the snapshot of another tools directory was used")
		}
		for _, tl := range r.List() {
			if filepath.Dir(tl.Path) != "tools/g1" {
				t.Errorf("%s registered under tools/g1", tl.Path)
			}
		}
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
}

// TestSnapshotCraftedIndexIsRefused: a snapshot whose checksum holds but
// whose index is inconsistent (a doc listing a term twice, another term
// posting to it) is refused, and Search neither panics nor misses the
// tools (found by review).
func TestSnapshotCraftedIndexIsRefused(t *testing.T) {
	rt := newRoot(t)
	rt.write("tools/y.ts", "/** Gamma thing. */\nexport default function () { return 1; }\n")
	opts := rt.withState(rt.options())
	idx := append([]byte("agentos-inverted 1\n"), 0) // a header of no indexer: refused as such too
	b := binform.AppendString(binform.AppendString([]byte(snapMagic), "tools"), shardDir(DefaultFile))
	b = binary.AppendUvarint(b, 0)
	b = binform.AppendBytes(b, idx)
	b = binary.AppendUvarint(b, 1)
	b = binform.AppendStrings(binform.AppendString(binform.AppendString(binform.AppendString(b, "tools/x.ts"), "x"), "alpha"), nil)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := os.WriteFile(filepath.Join(rt.dir, ".agentos", DefaultSnapshotFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ := rt.parsesOf(opts)
	defer closeChecked(t, r)
	if hits := r.Search("gamma thing", 5); len(hits) != 1 || hits[0].Path != "tools/y.ts" {
		t.Errorf("search after a refused index: %+v", hits)
	}
	r.Search("alpha", 5)
	if rt.warn.count() == 0 {
		t.Error("no warning for the refused index")
	}
}

// TestSnapshotEntriesCarryEveryField: an entry with every field of Tool
// set comes back from the snapshot's binary form whole. A field added to
// Tool and not to appendEntries fails here (a start from the snapshot
// would lose it).
func TestSnapshotEntriesCarryEveryField(t *testing.T) {
	var tl Tool
	v := reflect.ValueOf(&tl).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Interface().(type) {
		case string:
			f.SetString("value of " + name)
		case json.RawMessage:
			f.SetBytes([]byte(`{"type":"object"}`))
		case []string:
			f.Set(reflect.ValueOf([]string{"one", name}))
		case int:
			f.SetInt(int64(7 + i))
		case time.Time:
			f.Set(reflect.ValueOf(epoch.Add(time.Duration(i) * time.Hour)))
		default:
			t.Fatalf("Tool.%s is a %s, which this test (and appendEntries) does not know: carry it in the snapshot", name, f.Type())
		}
	}
	m, err := decodeEntries(string(appendEntries(nil, map[string]*Tool{tl.Path: &tl})))
	if err != nil {
		t.Fatal(err)
	}
	if got := m[tl.Path]; got == nil || !reflect.DeepEqual(*got, tl) {
		t.Errorf("from the snapshot:\n%+v\nwant\n%+v", got, tl)
	}
}
