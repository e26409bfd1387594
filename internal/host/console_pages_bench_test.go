package host

import (
	"context"
	"encoding/json"
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

// BenchmarkConsoleToolPages100k measures the Tools, Approvals and
// Processes pages (server time, no network) over the journal of 100,000
// runs the journal's benchmarks build (see BenchmarkConsolePages100k): a
// tool's page reads its versions and a version's runs from the journal's
// index of runs by tool.
//
//	go test -run '^$' -bench ConsoleToolPages100k -benchtime 10x ./internal/host/
func BenchmarkConsoleToolPages100k(b *testing.B) {
	path := filepath.Join(os.TempDir(), "agentos-bench-runs-100000", "journal-format4.db")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no journal of 100,000 runs at %s: build it with 'go test -run ^$ -bench RunsFirstPage ./journal/'", path)
	}
	rt, err := Start(context.Background(), Config{Root: b.TempDir(), Isolation: "inprocess", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"path": "tools/t5.ts", "content": "/** Benchmark tool five. */\nexport default function t5(): number {\n  return 5;\n}\n"})
	if _, err := rt.Call(context.Background(), "write_file", args); err != nil {
		b.Fatal(err)
	}
	big, err := journal.Open(path, journal.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	own := rt.j
	rt.j = big
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
	for _, page := range []struct{ name, url string }{
		{"tools", "/tools"},
		{"search", "/tools?q=benchmark+tool+five"},
		{"tool", "/tools/tools/t5.ts"},
		{"approvals", "/approvals"},
		{"log", "/approvals/log"},
		{"procs", "/procs"},
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
