package memory_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/memory"
)

// benchWords is a vocabulary with a Zipf-like use: a few common words, a
// long tail of rare ones (names, values), as in tool results.
var benchWords = func() []string {
	w := make([]string, 8000)
	for i := range w {
		w[i] = fmt.Sprintf("w%dx%d", i%97, i)
	}
	return w
}()

func benchText(r *rand.Rand, n int) string {
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[z.Uint64()])
	}
	return b.String()
}

var (
	bigOnce  sync.Once
	bigStore *memory.Store
	bigErr   error
)

// bigMemory is one agent with 100k pages of 60 words (about 0.5 KiB each),
// built once per test binary (in a directory removed at exit).
func bigMemory(b *testing.B) *memory.Store {
	bigOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			bigErr = err
			return
		}
		s := memory.Open(filepath.Join(dir, "memory.db"), memory.Options{NoSync: true, MaxItems: 200000})
		r := rand.New(rand.NewPCG(1, 2))
		const total, batch = 100000, 2000
		for i := 0; i < total; i += batch {
			items := make([]memory.Item, batch)
			for j := range items {
				items[j] = memory.Item{Kind: memory.Page, Text: fmt.Sprintf("page %d: %s", i+j, benchText(r, 60)), Tags: []string{"page", "read_file"}}
			}
			if _, _, err := s.RememberAll("bench", items); err != nil {
				bigErr = err
				return
			}
		}
		bigStore = s
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigStore
}

// BenchmarkRecall100kPages: one recall (3-word query, 5 hits) over an agent
// holding 100k pages; p50 and p99 per recall are reported as custom
// metrics. "common" queries draw their words as the pages do (Zipf: their
// terms occur in most pages, BM25's worst case, every posting scored);
// "rare" queries draw them uniformly from the vocabulary (names, values:
// what an agent recalls).
func BenchmarkRecall100kPages(b *testing.B) {
	s := bigMemory(b)
	for _, c := range []struct {
		name string
		gen  func(r *rand.Rand) string
	}{
		{"common", func(r *rand.Rand) string { return benchText(r, 3) }},
		{"rare", func(r *rand.Rand) string {
			return benchWords[r.IntN(len(benchWords))] + " " + benchWords[r.IntN(len(benchWords))] + " " + benchWords[r.IntN(len(benchWords))]
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			queries := make([]string, 1024)
			for i := range queries {
				queries[i] = c.gen(r)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := s.Recall("bench", queries[i%len(queries)], memory.RecallOptions{Limit: 5}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkRemember: one fact remembered (one fsynced bbolt transaction and
// the index update), in an agent memory that grows.
func BenchmarkRemember(b *testing.B) {
	s := memory.Open(filepath.Join(b.TempDir(), "memory.db"), memory.Options{MaxItems: 1 << 30})
	defer s.Close()
	r := rand.New(rand.NewPCG(5, 6))
	texts := make([]string, 4096)
	for i := range texts {
		texts[i] = benchText(r, 20)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Remember("bench", memory.Item{Text: fmt.Sprintf("%d %s", i, texts[i%len(texts)])}); err != nil {
			b.Fatal(err)
		}
	}
}
