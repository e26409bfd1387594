package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/transpile"
)

// TestWriteTouchesOneShard: in a registry of 600 tools, registering a new
// tool rewrites its shard only (every other shard file keeps its bytes and
// its mtime) and Written reports that one file; the registry file of
// earlier versions is never written.
func TestWriteTouchesOneShard(t *testing.T) {
	rt := newRoot(t)
	for i := range 600 {
		rt.write(fmt.Sprintf("tools/t%03d.ts", i), fmt.Sprintf("/** Tool %d. */\nexport default () => %d;\n", i, i))
	}
	r := rt.open(rt.options())
	r.Written() // what Open wrote
	before := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(rt.dir, "meta", "*.json"))
	if len(files) < 200 {
		t.Fatalf("%d shard files for 600 tools, want them spread over most of the %d shards", len(files), Shards)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		before[f] = string(b)
	}
	const p = "tools/new.ts"
	src := "/** A new one. */\nexport default () => 0;\n"
	rt.write(p, src)
	if _, err := r.Register(p, []byte(src)); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Written(), []string{ShardFile("meta.json", p)}; !slices.Equal(got, want) {
		t.Fatalf("Written after one Register = %v, want %v", got, want)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if changed := string(b) != before[f]; changed != (f == rt.shard(p)) {
			t.Errorf("%s changed: %v", f, changed)
		}
	}
	if _, err := os.Stat(filepath.Join(rt.dir, "meta.json")); !os.IsNotExist(err) {
		t.Errorf("meta.json written: %v", err)
	}
	if m := rt.meta(); len(m) != 601 || m[p].Description != "A new one." {
		t.Fatalf("the shards hold %d tools (new: %+v)", len(m), m[p])
	}
}

// TestSingleFileMigrates: a tool root with the registry file of earlier
// versions (meta.json holding every tool) opens with its versions, dates
// and usage counts; its entries move into the shards, meta.json is
// removed, and Written reports both (what the next commit carries). An
// empty meta.json (agentos init's) goes the same way.
func TestSingleFileMigrates(t *testing.T) {
	rt := newRoot(t)
	srcA := "/** Ay. */\nexport default function a() {}\n"
	srcB := "/** Bee. */\nexport default function b() {}\n"
	rt.write("tools/a.ts", srcA)
	rt.write("tools/b.ts", srcB)
	old := map[string]Tool{}
	for p, src := range map[string]string{"tools/a.ts": srcA, "tools/b.ts": srcB} {
		tl := Tool{Path: p, Name: toolName(p), Hash: transpile.Hash([]byte(src)), Version: 3, Usage: 7, Created: epoch, Updated: epoch}
		setMeta(&tl, toolmeta.Extract([]byte(src)))
		old[p] = tl
	}
	b, _ := json.MarshalIndent(map[string]any{"tools": old}, "", "  ")
	rt.write("meta.json", string(b))

	r := rt.open(rt.options())
	for p := range old {
		if got, _ := r.Get(p); got.Version != 3 || got.Usage != 7 || !got.Created.Equal(epoch) {
			t.Errorf("%s after the migration: %+v", p, got)
		}
	}
	if _, err := os.Stat(filepath.Join(rt.dir, "meta.json")); !os.IsNotExist(err) {
		t.Fatalf("meta.json still there after the migration: %v", err)
	}
	written := r.Written()
	want := []string{"meta.json", ShardFile("meta.json", "tools/a.ts"), ShardFile("meta.json", "tools/b.ts")}
	for _, w := range want {
		if !slices.Contains(written, w) {
			t.Errorf("Written = %v, missing %s", written, w)
		}
	}
	if m := rt.meta(); len(m) != 2 || m["tools/a.ts"].Version != 3 || m["tools/b.ts"].Usage != 7 {
		t.Fatalf("shards after the migration: %+v", m)
	}

	empty := newRoot(t)
	empty.write("meta.json", "{\n  \"tools\": {}\n}\n")
	re := empty.open(empty.options())
	if _, err := os.Stat(filepath.Join(empty.dir, "meta.json")); !os.IsNotExist(err) || !slices.Equal(re.Written(), []string{"meta.json"}) {
		t.Fatalf("an empty meta.json: %v, written %v", err, re.Written())
	}
}
