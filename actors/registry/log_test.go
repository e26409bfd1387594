package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/vfs"
)

// withState gives the registry a state directory (a real jail over
// <root>/.agentos), so that writes go to the log.
func (rt *root) withState(opts Options) Options {
	rt.t.Helper()
	dir := filepath.Join(rt.dir, ".agentos")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		rt.t.Fatal(err)
	}
	j, err := vfs.Open(dir)
	if err != nil {
		rt.t.Fatal(err)
	}
	rt.t.Cleanup(func() { j.Close() })
	opts.State = j
	return opts
}

func (rt *root) logLines() []string {
	rt.t.Helper()
	b, err := os.ReadFile(filepath.Join(rt.dir, ".agentos", DefaultLogFile))
	if err != nil && !os.IsNotExist(err) {
		rt.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[:strings.Count(string(b), "\n")]
}

// With a state directory, Register and Remove append to the log and leave
// meta.json alone; another registry on the root sees them (meta.json plus
// the log); Flush writes meta.json and empties the log.
func TestLogWrites(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.withState(rt.options()))
	shards := func() string { // every shard file's name and content
		files, _ := filepath.Glob(filepath.Join(rt.dir, "meta", "*.json"))
		var all strings.Builder
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all.WriteString(f + "\n" + string(b))
		}
		return all.String()
	}
	before := shards()
	for i := range 3 {
		p := fmt.Sprintf("tools/t%d.ts", i)
		rt.write(p, fmt.Sprintf("/** Tool %d. */\nexport default () => %d;\n", i, i))
		if _, err := r.Register(p, []byte(fmt.Sprintf("/** Tool %d. */\nexport default () => %d;\n", i, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Remove("tools/t1.ts"); err != nil {
		t.Fatal(err)
	}
	rt.remove("tools/t1.ts")
	if after := shards(); after != before {
		t.Fatalf("the registry's shards rewritten by a write with a log:\n%s", after)
	}
	if n := len(rt.logLines()); n != 4 {
		t.Fatalf("the log holds %d records, want 4 (3 registered, 1 removed)", n)
	}
	// Another registry (another process) on the root: meta.json + log.
	other, err := Open(rt.jail, rt.withState(rt.options()))
	if err != nil {
		t.Fatal(err)
	}
	got := other.List()
	other.Close()
	if len(got) != 2 || got[0].Path != "tools/t0.ts" || got[1].Path != "tools/t2.ts" || got[0].Description != "Tool 0." || got[1].Version != 1 {
		t.Fatalf("a registry opened on the root lists %+v", got)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	m := rt.meta()
	if len(m) != 2 || m["tools/t0.ts"].Description != "Tool 0." {
		t.Fatalf("meta.json after Flush: %+v", m)
	}
	if n := len(rt.logLines()); n != 0 {
		t.Fatalf("the log holds %d records after Flush, want none", n)
	}
}

// A torn last record (a kill mid-write) is dropped with a warning; the
// records before it count, and the torn one's tool is registered again
// from its file.
func TestLogTornRecord(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.withState(rt.options()))
	for _, n := range []string{"a", "b"} {
		p := "tools/" + n + ".ts"
		src := "/** " + n + " tool. */\nexport default () => 1;\n"
		rt.write(p, src)
		if _, err := r.Register(p, []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(rt.dir, ".agentos", DefaultLogFile)
	b, _ := os.ReadFile(logPath)
	torn := b[:len(b)-7] // the second record cut short
	if err := os.WriteFile(logPath, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := Open(rt.jail, rt.withState(rt.options()))
	if err != nil {
		t.Fatalf("Open over a torn log: %v", err)
	}
	defer other.Close()
	if a, ok := other.Get("tools/a.ts"); !ok || a.Description != "a tool." {
		t.Fatalf("the record before the torn one is lost: %+v %v", a, ok)
	}
	if b, ok := other.Get("tools/b.ts"); !ok || b.Description != "b tool." || b.Version != 1 {
		t.Fatalf("the torn record's tool is not registered again from its file: %+v %v", b, ok)
	}
	if !rt.warn.has("damaged record") {
		t.Fatal("no warning about the torn record")
	}
}

// A kill between compaction's two renames leaves records already in
// meta.json in the log: replaying them changes nothing (no version bump,
// no lost usage, a removal stays removed).
func TestLogReplayIsIdempotent(t *testing.T) {
	rt := newRoot(t)
	r := rt.open(rt.withState(rt.options()))
	src := func(v int) string { return fmt.Sprintf("/** Version %d. */\nexport default () => %d;\n", v, v) }
	rt.write("tools/x.ts", src(1))
	mustRegister(t, r, "tools/x.ts", src(1))
	rt.write("tools/x.ts", src(2))
	mustRegister(t, r, "tools/x.ts", src(2))
	rt.write("tools/gone.ts", src(3))
	mustRegister(t, r, "tools/gone.ts", src(3))
	if err := r.Remove("tools/gone.ts"); err != nil {
		t.Fatal(err)
	}
	rt.remove("tools/gone.ts")
	logPath := filepath.Join(rt.dir, ".agentos", DefaultLogFile)
	saved, _ := os.ReadFile(logPath)
	for range 3 {
		r.Used("tools/x.ts")
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, saved, 0o600); err != nil { // the log as it was before the compaction
		t.Fatal(err)
	}
	other, err := Open(rt.jail, rt.withState(rt.options()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	x, _ := other.Get("tools/x.ts")
	if x.Version != 2 || x.Usage != 3 || x.Description != "Version 2." {
		t.Fatalf("after replaying an old log over meta.json: %+v; want version 2, usage 3", x)
	}
	if _, ok := other.Get("tools/gone.ts"); ok {
		t.Fatal("a removed tool came back")
	}
}

func mustRegister(t *testing.T, r *Registry, p, src string) {
	t.Helper()
	if _, err := r.Register(p, []byte(src)); err != nil {
		t.Fatal(err)
	}
}

// benchRegister measures Register of a new version of one tool in a
// registry of n tools (written to meta.json first): with the log (state
// directory given) and without it (meta.json rewritten on every write).
func benchRegister(b *testing.B, n int, log bool) {
	dir := b.TempDir()
	j, err := vfs.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	rt := &root{dir: dir, jail: j, warn: &warnings{}}
	opts := rt.options()
	if log {
		if err := os.MkdirAll(filepath.Join(dir, ".agentos"), 0o700); err != nil {
			b.Fatal(err)
		}
		sj, err := vfs.Open(filepath.Join(dir, ".agentos"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sj.Close() })
		opts.State = sj
	}
	r, err := Open(j, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	r.mu.Lock()
	for _, t := range synthetic(n) {
		r.setTool(t.Path, t)
		r.idx.Put(t, r.toolsDir)
	}
	r.mu.Unlock()
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	srcs := make([][]byte, 64)
	for i := range srcs {
		srcs[i] = []byte(fmt.Sprintf("/** Counts things, version %d. @tag bench */\nexport default function count(args: { n: number }): number {\n  return args.n + %d;\n}\n", i, i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Register("tools/bench/count.ts", srcs[i%len(srcs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegister: one Register (a new version of a tool) in a registry
// of 100 and of 10,000 tools, with the log (the runtime's configuration)
// and without (every write rewrites meta.json).
func BenchmarkRegister(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		for _, log := range []bool{true, false} {
			name := fmt.Sprintf("tools=%d/log=%v", n, log)
			b.Run(name, func(b *testing.B) { benchRegister(b, n, log) })
		}
	}
}

func (w *warnings) has(sub string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}
