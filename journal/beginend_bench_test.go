package journal

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkBeginEnd is what a run's start and end cost the journal
// (bbolt, NoSync: no fsync hides the CPU): the run's metadata written
// twice, with its indexes.
//
//	go test -run '^$' -bench BeginEnd -benchtime 20000x -count 3 ./journal/
func BenchmarkBeginEnd(b *testing.B) {
	j, err := Open(filepath.Join(b.TempDir(), "journal.db"), Options{Durability: NoSync})
	if err != nil {
		b.Fatal(err)
	}
	meta := RunMeta{Kind: "exec", Tool: "tools/orders.ts", Hash: fmt.Sprintf("%064x", 1), Pinned: true, Args: []byte(`{"n":10,"region":"eu"}`),
		Modules: []Module{{Path: "tools/lib/a.ts", Hash: fmt.Sprintf("%064x", 2)}, {Path: "tools/lib/b.ts", Hash: fmt.Sprintf("%064x", 3)}}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		run, err := j.Begin(meta)
		if err == nil {
			err = run.End(StatusOK, nil, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
}
