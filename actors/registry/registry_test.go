package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// root is a tool root under t.TempDir() with a real jail.
type root struct {
	t    *testing.T
	dir  string
	jail *vfs.Jail
	warn *warnings
	now  atomic.Int64 // seconds since the test epoch; each call to clock adds one
}

func newRoot(t *testing.T) *root {
	t.Helper()
	dir := t.TempDir()
	j, err := vfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &root{t: t, dir: dir, jail: j, warn: &warnings{}}
}

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a deterministic Options.Now: one second later at each call.
func (rt *root) clock() time.Time { return epoch.Add(time.Duration(rt.now.Add(1)) * time.Second) }

func (rt *root) options() Options {
	return Options{Now: rt.clock, Logger: slog.New(rt.warn), FlushDelay: time.Hour}
}

// open opens the registry and, at cleanup, closes it and checks the
// invariants.
func (rt *root) open(opts Options) *Registry {
	rt.t.Helper()
	r, err := Open(rt.jail, opts)
	if err != nil {
		rt.t.Fatalf("Open: %v", err)
	}
	rt.t.Cleanup(func() {
		checkInvariants(rt.t, r)
		if err := r.Close(); err != nil {
			rt.t.Errorf("Close: %v", err)
		}
	})
	return r
}

func (rt *root) write(p, src string) {
	rt.t.Helper()
	full := filepath.Join(rt.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		rt.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
		rt.t.Fatal(err)
	}
}

func (rt *root) remove(p string) {
	rt.t.Helper()
	if err := os.Remove(filepath.Join(rt.dir, filepath.FromSlash(p))); err != nil {
		rt.t.Fatal(err)
	}
}

// shard is the absolute path of the shard file of the tool at p.
func (rt *root) shard(p string) string {
	return filepath.Join(rt.dir, filepath.FromSlash(shardPath("meta", shardOf(p))))
}

// meta reads and decodes the registry's shard files (meta/xx.json),
// merged, failing the test if one is not valid or holds a tool of another
// shard.
func (rt *root) meta() map[string]Tool {
	rt.t.Helper()
	files, _ := filepath.Glob(filepath.Join(rt.dir, "meta", "*.json"))
	out := map[string]Tool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			rt.t.Fatal(err)
		}
		var doc struct {
			Tools map[string]Tool `json:"tools"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.Tools) == 0 {
			rt.t.Fatalf("%s is not a registry shard with tools (%v):\n%s", f, err, b)
		}
		for p, e := range doc.Tools {
			if want := shardPath("meta", shardOf(p)); filepath.Join(rt.dir, filepath.FromSlash(want)) != f {
				rt.t.Fatalf("%s holds %s, which belongs in %s", f, p, want)
			}
			out[p] = e
		}
	}
	return out
}

// warnings is a slog handler counting Warn records.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }
func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// checkInvariants: after Flush the file holds exactly what List returns,
// and the index holds exactly the registered tools.
func checkInvariants(t *testing.T, r *Registry) {
	t.Helper()
	if err := r.Flush(); err != nil {
		t.Errorf("Flush: %v", err)
		return
	}
	if _, err := r.jail.Stat(r.file); !errors.Is(err, vfs.ErrNotFound) {
		t.Errorf("invariant: the single registry file %s is still there after a Flush (%v): its entries belong in the shards", r.file, err)
	}
	var f struct {
		Tools map[string]Tool
	}
	f.Tools = map[string]Tool{}
	names, _ := r.jail.List(r.dir)
	for _, n := range names {
		b, err := r.jail.ReadFile(n)
		if err != nil {
			t.Errorf("invariant: %s unreadable: %v", n, err)
			return
		}
		var doc struct {
			Tools map[string]Tool `json:"tools"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.Tools) == 0 {
			t.Errorf("invariant: %s is not a shard with tools: %v", n, err)
			return
		}
		for p, e := range doc.Tools {
			if shardPath(r.dir, shardOf(p)) != n {
				t.Errorf("invariant: %s holds %s, which belongs in shard %02x", n, p, shardOf(p))
			}
			f.Tools[p] = e
		}
	}
	list := r.List()
	if len(list) != len(f.Tools) {
		t.Errorf("invariant: %d tools in memory, %d in %s", len(list), len(f.Tools), r.file)
	}
	for _, m := range list {
		d, ok := f.Tools[m.Path]
		mj, _ := json.Marshal(m)
		dj, _ := json.Marshal(d)
		if !ok || string(mj) != string(dj) {
			t.Errorf("invariant: %s differs:\nmemory %s\nfile   %s", m.Path, mj, dj)
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	members := 0
	for i, m := range r.members {
		for p := range m {
			if r.tools[p] == nil || shardOf(p) != i {
				t.Errorf("invariant: shard %02x lists %s (registered: %v)", i, p, r.tools[p] != nil)
			}
		}
		members += len(m)
	}
	if members != len(r.tools) {
		t.Errorf("invariant: the shards list %d tools, the registry %d", members, len(r.tools))
	}
	usage := make(map[string]int, len(r.tools))
	for p, tl := range r.tools {
		usage[p] = tl.Usage
	}
	for _, bad := range r.idx.Verify(usage) {
		t.Errorf("invariant: %s", bad)
	}
}

const compoundSrc = `/** Calculates compound interest over years. @tag finance */
export default function compoundInterest(args: { principal: number; rate: number; years: number }) {
  return args.principal * Math.pow(1 + args.rate, args.years);
}
`

// corpus is a handful of realistic tools around the one under test.
var corpus = map[string]string{
	"tools/math/fib.ts": `/**
 * Computes the nth Fibonacci number.
 * @tag math
 */
export default function fib(args: { n: number }) {
  let a = 0, b = 1;
  for (let i = 0; i < args.n; i++) [a, b] = [b, a + b];
  return a;
}
`,
	"tools/comms/sendEmail.ts": `/** Sends an email to a recipient with a subject and body. @tag email, notifications */
export default async function sendEmail(args: { to: string; subject: string; body: string }) {
  return tgp.fetch('https://mail.internal/send', { method: 'POST', body: JSON.stringify(args) });
}
`,
	"tools/data/parse_csv.ts": `/** Parses CSV text into rows of fields. @tag data */
export default function parseCsv(args: { text: string; separator?: string }) {
  return args.text.split('\n').map((l) => l.split(args.separator ?? ','));
}
`,
	"tools/docs/roi.ts": `
        /**
         * Calculates the Return on Investment based on cost and revenue.
         */
        export default function roi(args: { cost: number, revenue: number }) {
          return (args.revenue - args.cost) / args.cost;
        }
`,
	"tools/finance/loan_payment.ts": `/** Computes the monthly payment of a loan from its principal, annual rate and term. @tag finance */
export default function loanPayment(args: { principal: number; rate: number; months: number }) {
  return args.principal * args.rate / 12;
}
`,
}

// TestRegistryIntegrity is the seed's "registry integrity" scenario: a tool
// written with a JSDoc is in meta.json on disk with that description, and
// search finds it above the reuse threshold.
func TestRegistryIntegrity(t *testing.T) {
	rt := newRoot(t)
	rt.write("meta.json", "{\n  \"tools\": {}\n}\n") // what agentos init writes
	r := rt.open(rt.options())
	for p, src := range corpus {
		rt.write(p, src)
		if _, err := r.Register(p, []byte(src)); err != nil {
			t.Fatalf("Register %s: %v", p, err)
		}
	}
	const path = "tools/finance/compound_interest.ts"
	rt.write(path, compoundSrc)
	tool, err := r.Register(path, []byte(compoundSrc))
	if err != nil {
		t.Fatal(err)
	}
	want := Tool{
		Path: path, Name: "compound_interest",
		Description: "Calculates compound interest over years.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"principal":{"type":"number"},"rate":{"type":"number"},"years":{"type":"number"}},"required":["principal","rate","years"]}`),
		Tags:        []string{"finance"},
		Hash:        transpile.Hash([]byte(compoundSrc)),
		Version:     1,
		Created:     tool.Created, Updated: tool.Created,
	}
	if !reflect.DeepEqual(tool, want) {
		t.Fatalf("registered\n%+v\nwant\n%+v", tool, want)
	}
	onDisk := rt.meta()[path]
	if onDisk.Description != want.Description || !reflect.DeepEqual(onDisk.Tags, want.Tags) || onDisk.Hash != want.Hash {
		t.Fatalf("meta.json holds %+v", onDisk)
	}
	if d := rt.meta()["tools/docs/roi.ts"].Description; d != "Calculates the Return on Investment based on cost and revenue." {
		t.Fatalf("roi description in meta.json = %q", d)
	}

	hits := r.Search("compound interest calculator", 5)
	if len(hits) == 0 || hits[0].Path != path {
		t.Fatalf("search: %+v", hits)
	}
	if hits[0].Score < r.Threshold() || hits[0].Score < 0.85 {
		t.Fatalf("score of the matching tool = %v, want >= 0.85", hits[0].Score)
	}
	for _, q := range []string{"send an email", "resize a jpeg image", "translate text to french"} {
		for _, h := range r.Search(q, 10) {
			if h.Path == path && h.Score >= 0.3 {
				t.Errorf("unrelated query %q scores %v for %s", q, h.Score, path)
			}
		}
	}
	if hits := r.Search("send an email", 1); len(hits) != 1 || hits[0].Path != "tools/comms/sendEmail.ts" || hits[0].Score < 0.85 {
		t.Errorf("send an email: %+v", hits)
	}
}

func TestOpenRebuildsCorruptFile(t *testing.T) {
	good := `{"path":"tools/b.ts","name":"b","description":"%s","hash":"%s","version":4,"usage":9,"created":"2020-01-01T00:00:00Z","updated":"2021-01-01T00:00:00Z"}`
	srcB := "/** Bee. */\nexport default function b() {}\n"
	for _, tc := range []struct {
		name, file string
		warns      bool
		keepsB     bool // the good entry of b survives (usage 9, version 4)
	}{
		{name: "bad json", file: "{not json", warns: true},
		{name: "tools is a number", file: `{"tools": 5}`, warns: true},
		{name: "tools is null", file: `{"tools": null}`, warns: true},
		{name: "no tools", file: `{}`, warns: true},
		{name: "an array", file: `[]`, warns: true},
		{name: "empty", file: ``, warns: true},
		{name: "merge conflict", file: "<<<<<<< HEAD\n{\"tools\": {}}\n=======\n{\"tools\": {}}\n>>>>>>> feat/x\n", warns: true},
		{name: "bad entry among good", file: `{"tools": {"tools/a.ts": 5, "tools/b.ts": ` + fmt.Sprintf(good, "Bee.", transpile.Hash([]byte(srcB))) + `}}`, warns: true, keepsB: true},
		{name: "null entry among good", file: `{"tools": {"tools/a.ts": null, "tools/b.ts": ` + fmt.Sprintf(good, "Bee.", transpile.Hash([]byte(srcB))) + `}}`, warns: true, keepsB: true},
		{name: "entry outside the tools", file: `{"tools": {"../a.ts": {"hash": "x"}, "tools/b.ts": ` + fmt.Sprintf(good, "Bee.", transpile.Hash([]byte(srcB))) + `}}`, warns: true, keepsB: true},
		{name: "stale hash", file: `{"tools": {"tools/b.ts": ` + fmt.Sprintf(good, "Old.", "0123") + `}}`},
		{name: "missing file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRoot(t)
			rt.write("tools/a.ts", "/** Ay. @tag x */\nexport default function a(args: { n: number }) { return args.n; }\n")
			rt.write("tools/b.ts", srcB)
			if tc.name != "missing file" {
				rt.write("meta.json", tc.file)
			}
			r := rt.open(rt.options())
			if got := rt.warn.count() > 0; got != tc.warns {
				t.Errorf("warned = %v, want %v (%v)", got, tc.warns, rt.warn.msgs)
			}
			m := rt.meta()
			if len(m) != 2 || m["tools/a.ts"].Description != "Ay." || m["tools/b.ts"].Description != "Bee." {
				t.Fatalf("rebuilt meta.json: %+v", m)
			}
			if a, _ := r.Get("tools/a.ts"); a.Version != 1 || string(a.Parameters) == "" || !reflect.DeepEqual(a.Tags, []string{"x"}) {
				t.Errorf("a = %+v", a)
			}
			b, _ := r.Get("tools/b.ts")
			switch {
			case tc.keepsB:
				if b.Version != 4 || b.Usage != 9 || b.Description != "Bee." || !b.Created.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) {
					t.Errorf("good entry not kept: %+v", b)
				}
			case tc.name == "stale hash":
				// Re-registered: the description is extracted again, the
				// version bumped, usage and creation kept.
				if b.Version != 5 || b.Usage != 9 || b.Description != "Bee." || b.Hash != transpile.Hash([]byte(srcB)) {
					t.Errorf("stale entry not re-registered: %+v", b)
				}
			default:
				if b.Version != 1 || b.Usage != 0 {
					t.Errorf("b = %+v", b)
				}
			}
		})
	}
}

func TestOpenLeavesAGoodFileAlone(t *testing.T) {
	rt := newRoot(t)
	rt.write("tools/a.ts", "/** Ay. */\nexport default function a() {}\n")
	r := rt.open(rt.options())
	r.Used("tools/a.ts")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	metaPath := rt.shard("tools/a.ts")
	if err := os.Chtimes(metaPath, old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(metaPath)
	r2 := rt.open(rt.options())
	if a, _ := r2.Get("tools/a.ts"); a.Usage != 1 || a.Version != 1 {
		t.Fatalf("reopened: %+v", a)
	}
	if err := r2.Rebuild(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(metaPath)
	after, _ := os.ReadFile(metaPath)
	if !fi.ModTime().Equal(old) || string(before) != string(after) {
		t.Fatalf("meta.json rewritten though nothing changed (mtime %v, was %v)", fi.ModTime(), old)
	}
	if rt.warn.count() != 0 {
		t.Errorf("warnings: %v", rt.warn.msgs)
	}
}

func TestRegisterVersions(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	const p = "tools/math/fib.ts"
	v1 := "/** Fibonacci. */\nexport default function fib(args: { n: number }) { return args.n; }\n"
	v2 := "/** Fibonacci, faster. @tag math */\nexport default function fib(args: { n: number; memo?: boolean }) { return args.n; }\n"

	t1, err := r.Register(p, []byte(v1))
	if err != nil || t1.Version != 1 || t1.Name != "fib" || !t1.Created.Equal(t1.Updated) {
		t.Fatalf("first: %+v %v", t1, err)
	}
	// Same content: unchanged, and nothing written (the file stays away).
	if err := os.Remove(rt.shard(p)); err != nil {
		t.Fatal(err)
	}
	same, err := r.Register(p, []byte(v1))
	if err != nil || !reflect.DeepEqual(same, t1) {
		t.Fatalf("same content: %+v %v", same, err)
	}
	if _, err := os.Stat(rt.shard(p)); !os.IsNotExist(err) {
		t.Fatalf("same content rewrote its shard (%v)", err)
	}
	r.Used(p)
	r.Used(p)
	t2, err := r.Register(p, []byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	if t2.Version != 2 || !t2.Created.Equal(t1.Created) || !t2.Updated.After(t1.Updated) || t2.Usage != 2 ||
		t2.Description != "Fibonacci, faster." || !reflect.DeepEqual(t2.Tags, []string{"math"}) || t2.Hash != transpile.Hash([]byte(v2)) {
		t.Fatalf("changed: %+v", t2)
	}
	if m := rt.meta()[p]; m.Version != 2 || m.Usage != 2 {
		t.Fatalf("meta.json: %+v", m)
	}
	// Back to v1 is a change too.
	if t3, _ := r.Register(p, []byte(v1)); t3.Version != 3 {
		t.Fatalf("back to v1: %+v", t3)
	}
	// A new path starts at 1.
	if t4, _ := r.Register("tools/math/fib2.ts", []byte(v1)); t4.Version != 1 || t4.Usage != 0 {
		t.Fatalf("new path: %+v", t4)
	}
	// The returned tool is a copy.
	t2.Tags[0] = "mutated"
	if got, _ := r.Get(p); got.Tags != nil {
		t.Fatalf("tags of v1 are %q", got.Tags)
	}
}

func TestUsagePersistsAcrossOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		save  func(*Registry) error
	}{
		{"flush", time.Hour, (*Registry).Flush},
		{"close", time.Hour, (*Registry).Close},
		{"every use", -1, func(*Registry) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRoot(t)
			rt.write("tools/a.ts", "export default function a() {}\n")
			opts := rt.options()
			opts.FlushDelay = tc.delay
			r := rt.open(opts)
			for range 3 {
				r.Used("tools/a.ts")
			}
			r.Used("tools/unknown.ts") // ignored
			r.Used("../escape.ts")     // ignored
			if err := tc.save(r); err != nil {
				t.Fatal(err)
			}
			if u := rt.meta()["tools/a.ts"].Usage; u != 3 {
				t.Fatalf("usage on disk = %d, want 3", u)
			}
			r2 := rt.open(rt.options())
			if a, _ := r2.Get("tools/a.ts"); a.Usage != 3 {
				t.Fatalf("usage after Open = %d", a.Usage)
			}
		})
	}
}

func TestUsageTimerFlushes(t *testing.T) {
	rt := newRoot(t)
	rt.write("tools/a.ts", "export default function a() {}\n")
	opts := rt.options()
	opts.FlushDelay = time.Millisecond
	r := rt.open(opts)
	r.Used("tools/a.ts")
	deadline := time.Now().Add(10 * time.Second)
	for rt.meta()["tools/a.ts"].Usage != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the usage count was never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRebuildAfterChangesOnDisk(t *testing.T) {
	rt := newRoot(t)
	rt.write("tools/a.ts", "/** Ay. */\nexport default function a() {}\n")
	rt.write("tools/b.ts", "/** Bee. */\nexport default function b() {}\n")
	rt.write("tools/c.ts", "/** Sea. */\nexport default function c() {}\n")
	r := rt.open(rt.options())
	a0, _ := r.Get("tools/a.ts")
	b0, _ := r.Get("tools/b.ts")
	r.Used("tools/a.ts")
	r.Used("tools/b.ts")

	// A Git merge: b changed, c deleted, d added; vendor, test, declaration
	// and non-tool files appear; another node counted 5 uses of a.
	rt.write("tools/b.ts", "/** Bee, merged. @tag merged */\nexport default function b(args: { x: string }) {}\n")
	rt.remove("tools/c.ts")
	rt.write("tools/sub/d.js", "/** Dee. */\nexport default function d() {}\n")
	rt.write("tools/vendor/lib.ts", "export default function v() {}\n")
	rt.write("tools/d.test.ts", "export default function t() {}\n")
	rt.write("tools/types.d.ts", "export type X = number;\n")
	rt.write("tools/README.md", "# tools\n")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	// The merge brings a's shard as the other node wrote it.
	m := rt.meta()
	a := m["tools/a.ts"]
	a.Usage = 5
	shard := map[string]Tool{}
	for p, e := range m {
		if shardOf(p) == shardOf("tools/a.ts") {
			shard[p] = e
		}
	}
	shard["tools/a.ts"] = a
	b, _ := json.MarshalIndent(map[string]any{"tools": shard}, "", "  ")
	rt.write(shardPath("meta", shardOf("tools/a.ts")), string(b))

	if err := r.Rebuild(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, tl := range r.List() {
		paths = append(paths, tl.Path)
	}
	if want := []string{"tools/a.ts", "tools/b.ts", "tools/sub/d.js"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("tools = %q, want %q", paths, want)
	}
	if a, _ := r.Get("tools/a.ts"); a.Version != 1 || a.Usage != 5 || !a.Created.Equal(a0.Created) || !a.Updated.Equal(a0.Updated) {
		t.Errorf("unchanged a: %+v", a)
	}
	if b, _ := r.Get("tools/b.ts"); b.Version != 2 || b.Usage != 1 || !b.Created.Equal(b0.Created) || !b.Updated.After(b0.Updated) ||
		b.Description != "Bee, merged." || !reflect.DeepEqual(b.Tags, []string{"merged"}) || b.Parameters == nil {
		t.Errorf("changed b: %+v", b)
	}
	if d, _ := r.Get("tools/sub/d.js"); d.Version != 1 || d.Name != "d" || d.Description != "Dee." {
		t.Errorf("new d: %+v", d)
	}
	if hits := r.Search("sea", 10); len(hits) != 0 {
		t.Errorf("deleted tool still found: %+v", hits)
	}
	if hits := r.Search("merged", 10); len(hits) != 1 || hits[0].Path != "tools/b.ts" {
		t.Errorf("changed tool not re-indexed: %+v", hits)
	}
	if got := rt.meta(); len(got) != 3 || got["tools/a.ts"].Usage != 5 {
		t.Errorf("meta.json after Rebuild: %+v", got)
	}
}

func TestRegisterRefusesNonTools(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	for _, tc := range []struct {
		path string
		want error
	}{
		{"meta.json", regclient.ErrNotTool},
		{"lib/x.ts", regclient.ErrNotTool},
		{"tools/vendor/x.ts", regclient.ErrNotTool},
		{"tools/x.test.ts", regclient.ErrNotTool},
		{"tools/x.spec.js", regclient.ErrNotTool},
		{"tools/x.d.ts", regclient.ErrNotTool},
		{"tools/README.md", regclient.ErrNotTool},
		{"tools/.hidden.ts", regclient.ErrNotTool},
		{"tools/.ts", regclient.ErrNotTool},
		{"tools", regclient.ErrNotTool},
		{"../tools/x.ts", vfs.ErrSecurity},
		{"/tools/x.ts", vfs.ErrSecurity},
		{"", vfs.ErrInvalidPath},
	} {
		if _, err := r.Register(tc.path, []byte("export default function f() {}")); !errors.Is(err, tc.want) {
			t.Errorf("Register(%q) = %v, want %v", tc.path, err, tc.want)
		}
	}
	// A cleanable path is registered clean.
	if tl, err := r.Register("tools/./a/../b.ts", []byte("export default function b() {}")); err != nil || tl.Path != "tools/b.ts" {
		t.Errorf("Register of an unclean path: %+v %v", tl, err)
	}
	if err := r.Remove("tools/none.ts"); !errors.Is(err, regclient.ErrNotRegistered) {
		t.Errorf("Remove of an unknown tool = %v", err)
	}
	if err := r.Remove("tools/b.ts"); err != nil {
		t.Errorf("Remove = %v", err)
	}
	if _, ok := r.Get("tools/b.ts"); ok || len(rt.meta()) != 0 {
		t.Errorf("removed tool still registered")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register("tools/c.ts", []byte("x")); !errors.Is(err, regclient.ErrClosed) {
		t.Errorf("Register after Close = %v", err)
	}
	if err := r.Rebuild(); !errors.Is(err, regclient.ErrClosed) {
		t.Errorf("Rebuild after Close = %v", err)
	}
}

func TestOpenOptions(t *testing.T) {
	rt := newRoot(t)
	for _, opts := range []Options{
		{Threshold: 1.5},
		{Threshold: -0.1},
		{File: "../meta.json"},
		{ToolsDir: "/abs"},
		{File: "."},
	} {
		if _, err := Open(rt.jail, opts); !errors.Is(err, regclient.ErrOptions) {
			t.Errorf("Open(%+v) = %v, want ErrOptions", opts, err)
		}
	}
	if _, err := Open(nil, Options{}); !errors.Is(err, regclient.ErrOptions) {
		t.Errorf("Open(nil) = %v", err)
	}
	// Other directories and files.
	rt.write("src/tools/x.ts", "/** Ex. */\nexport default function x() {}\n")
	r := rt.open(Options{ToolsDir: "src/tools", File: "state/registry.json", Threshold: 0.5, Logger: slog.New(slog.DiscardHandler)})
	if r.Threshold() != 0.5 {
		t.Errorf("threshold %v", r.Threshold())
	}
	if x, ok := r.Get("src/tools/x.ts"); !ok || x.Description != "Ex." {
		t.Errorf("x = %+v", x)
	}
	if _, err := os.Stat(filepath.Join(rt.dir, filepath.FromSlash(shardPath("state/registry", shardOf("src/tools/x.ts"))))); err != nil {
		t.Error(err)
	}
	if r2 := rt.open(Options{ToolsDir: "src/tools", File: "state/registry.json"}); r2.Threshold() != regclient.DefaultThreshold {
		t.Errorf("default threshold %v", r2.Threshold())
	}
}

func TestPersistFailureKeepsTheChange(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	// The tool's shard becomes a non-empty directory: the atomic rename
	// fails.
	metaPath := rt.shard("tools/a.ts")
	if err := os.MkdirAll(filepath.Join(metaPath, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	tl, err := r.Register("tools/a.ts", []byte("/** Ay. */\nexport default function a() {}"))
	if !errors.Is(err, regclient.ErrPersist) || tl.Version != 1 {
		t.Fatalf("Register = %+v, %v; want the tool and ErrPersist", tl, err)
	}
	if _, ok := r.Get("tools/a.ts"); !ok {
		t.Fatal("the tool is not kept in memory")
	}
	if err := r.Flush(); !errors.Is(err, regclient.ErrPersist) {
		t.Fatalf("Flush = %v", err)
	}
	if err := os.RemoveAll(metaPath); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := rt.meta(); m["tools/a.ts"].Description != "Ay." {
		t.Fatalf("meta.json: %+v", m)
	}
}

// TestConcurrentRegisterSearch runs registrations, searches, uses, lists
// and rebuilds at once; run it with -race. The invariants are checked at
// cleanup.
func TestConcurrentRegisterSearch(t *testing.T) {
	rt := newRoot(t)
	opts := rt.options()
	opts.FlushDelay = time.Millisecond
	r := rt.open(opts)
	const writers, searchers, rounds = 4, 4, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				p := fmt.Sprintf("tools/w%d/tool%d.ts", w, i%7)
				src := fmt.Sprintf("/** Computes report %d of writer %d. @tag w%d */\nexport default function t(args: { n: number }) { return %d; }\n", i, w, w, i)
				// As the kernel does: the git actor writes, then the
				// registry registers (a Rebuild may come in between).
				if err := rt.jail.WriteFile(p, []byte(src)); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.Register(p, []byte(src)); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 9 {
					if err := os.Remove(filepath.Join(rt.dir, filepath.FromSlash(p))); err != nil {
						t.Error(err)
						return
					}
					if err := r.Remove(p); err != nil && !errors.Is(err, regclient.ErrNotRegistered) {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	for s := range searchers {
		wg.Go(func() {
			for i := range rounds * 2 {
				for _, h := range r.Search(fmt.Sprintf("computes report %d writer", i%rounds), 5) {
					if h.Score < 0 || h.Score > 1 || h.Path == "" {
						t.Errorf("bad hit %+v", h)
					}
					r.Used(h.Path)
				}
				if s == 0 && i%20 == 0 {
					if err := r.Rebuild(); err != nil {
						t.Error(err)
					}
				}
				_ = r.List()
				_, _ = r.Get("tools/w0/tool1.ts")
			}
		})
	}
	wg.Wait()
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range rt.meta() {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if len(paths) != len(r.List()) {
		t.Fatalf("meta.json has %d tools, registry %d", len(paths), len(r.List()))
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "tools/w") {
			t.Fatalf("unexpected tool %s", p)
		}
	}
}

// TestWatch: Register (new tool, new version; not the same source again),
// Remove and a Rebuild that finds a change call the watchers; a stopped
// watcher is not called.
func TestWatch(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.options())
	var calls atomic.Int32
	stop := r.Watch(func() { calls.Add(1) })
	src := []byte("/** Adds two numbers. */\nexport default function add(a: number, b: number): number { return a + b; }\n")
	rt.write("tools/add.ts", string(src))
	if _, err := r.Register("tools/add.ts", src); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("after a new tool: %d calls, want 1", got)
	}
	if _, err := r.Register("tools/add.ts", src); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("after the same source again: %d calls, want 1", got)
	}
	rt.write("tools/sub.ts", "/** Subtracts. */\nexport default function sub(a: number, b: number): number { return a - b; }\n")
	if err := r.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("after a Rebuild finding a new tool: %d calls, want 2", got)
	}
	if err := r.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("after a Rebuild finding nothing new: %d calls, want 2", got)
	}
	if err := r.Remove("tools/add.ts"); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("after a Remove: %d calls, want 3", got)
	}
	stop()
	if err := r.Remove("tools/sub.ts"); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("after stop: %d calls, want 3", got)
	}
}
