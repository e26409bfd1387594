package host

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/journal"
)

// BenchmarkConsolePages100k measures the console's pages (server time,
// no network) over the journal of 100,000 runs the journal's benchmarks
// build (go test -run '^$' -bench RunsFirstPage ./journal/ builds it once
// into the temp directory): the first page, a page deep in the journal,
// filtered pages (one that matches every hundredth run, one that matches
// none and stops at its scan bound) and a run's page.
//
//	go test -run '^$' -bench ConsolePages100k -benchtime 20x ./internal/host/
func BenchmarkConsolePages100k(b *testing.B) {
	path := filepath.Join(os.TempDir(), "agentos-bench-runs-100000", "journal-format4.db")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no journal of 100,000 runs at %s: build it with 'go test -run ^$ -bench RunsFirstPage ./journal/'", path)
	}
	rt, err := Start(context.Background(), Config{Root: b.TempDir(), Isolation: "inprocess", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	big, err := journal.Open(path, journal.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	own := rt.j
	rt.j = big // the console reads the big journal; the node keeps its own for Close
	b.Cleanup(func() {
		rt.j = own
		big.Close()
		if err := rt.Close(); err != nil {
			b.Error(err)
		}
	})
	srv, err := rt.Console(console.Options{Addr: "127.0.0.1:0", Anonymous: true})
	if err != nil {
		b.Fatal(err)
	}
	var deep, one string
	n := 0
	_ = big.EachRun(journal.RunQuery{Limit: 50_001}, func(m journal.RunMeta) error {
		n++
		if n == 1 {
			one = m.ID
		}
		deep = m.ID
		return nil
	})
	for _, page := range []struct{ name, url string }{
		{"first", "/runs"},
		{"deep", "/runs?before=" + deep},
		{"tool", "/runs?tool=tools/t5.ts"},
		{"nomatch", "/runs?kind=forge"},
		{"run", "/runs/" + one},
	} {
		b.Run(page.name, func(b *testing.B) {
			for range b.N {
				req := httptest.NewRequest(http.MethodGet, page.url, nil)
				req.Host = "127.0.0.1"
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", page.url, w.Code, w.Body)
				}
			}
		})
	}
}
