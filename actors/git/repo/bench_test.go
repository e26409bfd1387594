package repo_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// BenchmarkPersist: write one tool and Persist it to a local bare
// repository (commit + push).
func BenchmarkPersist(b *testing.B) {
	up := newUpstream(b)
	dir := b.TempDir()
	r := hydrate(b, dir, up)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := fmt.Sprintf("tools/bench/t%d.ts", i)
		writeFile(b, dir, p, fmt.Sprintf("export default () => %d", i))
		if _, err := r.Persist(ctx, []string{p}, "write "+p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHydrate100: hydrate a fresh tool root from an upstream holding
// 100 tools.
func BenchmarkHydrate100(b *testing.B) {
	up := newUpstream(b)
	files := map[string]string{}
	for i := 0; i < 100; i++ {
		files[fmt.Sprintf("tools/t%02d/tool%d.ts", i%10, i)] = fmt.Sprintf("/** Tool %d. */\nexport default function tool%d(args: { n: number }): number {\n  return args.n * %d;\n}\n", i, i, i)
	}
	plainCommit(b, up, "main", files, "100 tools")
	root := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := repo.Hydrate(ctx, repo.Options{Dir: filepath.Join(root, fmt.Sprint(i)), Upstream: up})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkRehydrate200: start again on an existing tool root holding 200
// persisted tools (several packs) with nothing new upstream: what every
// CLI command without a node pays (lock, verification of the store,
// fetch, scan of the working tree).
func BenchmarkRehydrate200(b *testing.B) {
	up := newUpstream(b)
	dir := b.TempDir()
	r := hydrate(b, dir, up)
	for i := 0; i < 200; i++ {
		p := fmt.Sprintf("tools/t%02d/tool%d.ts", i%10, i)
		writeFile(b, dir, p, fmt.Sprintf("/** Tool %d. */\nexport default function tool%d(args: { n: number }): number {\n  return args.n * %d;\n}\n", i, i, i))
		if _, err := r.Persist(ctx, []string{p}, "write "+p); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := repo.Hydrate(ctx, repo.Options{Dir: dir, Upstream: up})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
