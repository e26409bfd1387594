package e2e_test

import (
	"github.com/agentos-run/agentos/internal/host"

	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/journal"
)

var update = flag.Bool("update", false, "rewrite the golden journals in testdata/golden from a fresh recording")

// goldenTool reads a file, uses /tmp, Math.random and Date: every built-in
// device.
const goldenTool = `/** Summarises a CSV file of orders. */
export default async function (args: { file: string }) {
  const rows = (await tgp.read_file(args.file)).trim().split('\n').slice(1);
  const total = rows.map((r) => Number(r.split(',')[1])).reduce((a, b) => a + b, 0);
  await tgp.write_file('/tmp/total.txt', String(total));
  return { rows: rows.length, total: Number(await tgp.read_file('/tmp/total.txt')), sample: Math.random(), at: new Date().toISOString() };
}
`

// TestGoldenJournals replays every journal in testdata/golden offline. A
// good-*.json journal must replay to its recorded result; a bad-CODE-*.json
// one must fail with that divergence code (as Temporal's SDK keeps bad
// histories).
func TestGoldenJournals(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if *update {
		writeGoldens(t, dir)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) < 4 {
		t.Fatalf("found %d golden journals in %s; run go test -run TestGoldenJournals -update .", len(files), dir)
	}
	root := t.TempDir()
	host.Init(root, host.InitOptions{NoGit: true})
	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	// Each journal replays from both storages: the embedded file and a
	// shared PostgreSQL journal (skipped without PostgreSQL installed).
	for _, storage := range []string{"bbolt", "postgres"} {
		t.Run(storage, func(t *testing.T) {
			open := func(t *testing.T) (*journal.Journal, error) {
				return journal.Open(filepath.Join(t.TempDir(), "j.db"), journal.Options{Durability: journal.NoSync})
			}
			if storage == "postgres" {
				dsn := pgtest.Start(t)
				open = func(*testing.T) (*journal.Journal, error) {
					return journal.OpenPostgres(dsn, journal.Options{Durability: journal.NoSync})
				}
			}
			replayGoldens(t, ex, files, open)
		})
	}
}

// replayGoldens replays each golden journal imported into a journal open
// returns.
func replayGoldens(t *testing.T, ex *executor.Executor, files []string, open func(*testing.T) (*journal.Journal, error)) {
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var d journal.Dump
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			j, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if err := j.Import(d); err != nil {
				t.Fatal(err)
			}
			// The tool's data file is NOT in the tool root: replay must not need it.
			rep, err := executor.Replay(context.Background(), ex, j, d.Run.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(name, "good-") {
				if rep.Divergence != nil || !rep.Same {
					t.Fatalf("good journal did not replay: %+v %v", rep.Result, rep.Divergence)
				}
				return
			}
			code := "AGENTOS-" + strings.Split(name, "-")[1]
			if rep.Divergence == nil || rep.Divergence.Code != code {
				t.Fatalf("bad journal: divergence %v, want %s", rep.Divergence, code)
			}
		})
	}
}

// writeGoldens records the golden tool for real and derives the bad journals.
func writeGoldens(t *testing.T, dir string) {
	root := t.TempDir()
	host.Init(root, host.InitOptions{NoGit: true})
	os.WriteFile(filepath.Join(root, "tools", "orders.ts"), []byte(goldenTool), 0o644)
	os.WriteFile(filepath.Join(root, "orders.csv"), []byte("id,amount\n1,40\n2,60\n3,25\n"), 0o644)
	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess,
		Seed: func() uint64 { return 7 }, Clock: func() time.Time { return time.Date(2026, 6, 30, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	j, err := journal.Open(filepath.Join(root, "j.db"), journal.Options{Now: func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, id, err := executor.Record(context.Background(), ex, j, executor.Request{Path: "tools/orders.ts", Args: json.RawMessage(`{"file": "orders.csv"}`)})
	if err != nil || !res.Success {
		t.Fatalf("%v %+v", err, res.Error)
	}
	good, err := j.Export(id)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	save := func(name string, d journal.Dump) {
		b, _ := json.MarshalIndent(d, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	save("good-orders.json", good)

	differs := clone(good)
	differs.Entries[0].Request = json.RawMessage(`{"path":"orders-2025.csv"}`)
	save("bad-J001-request-differs.json", differs)

	short := clone(good)
	short.Entries = short.Entries[:len(short.Entries)-1]
	save("bad-J002-beyond-end.json", short)

	extra := clone(good)
	last := extra.Entries[len(extra.Entries)-1]
	last.Seq++
	extra.Entries = append(extra.Entries, last)
	save("bad-J003-unconsumed.json", extra)
}

func clone(d journal.Dump) journal.Dump {
	b, _ := json.Marshal(d)
	var c journal.Dump
	json.Unmarshal(b, &c)
	return c
}
