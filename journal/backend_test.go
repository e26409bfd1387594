package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentos-run/agentos/internal/pgtest"
)

// The tests of this package run against both storages: a test that calls
// both(t, ...) runs its body as the subtests "bbolt" and "postgres", and
// the helpers (openAt, openTemp, noSecretIn) open and scan the storage
// the subtest's name says. A journal "path" under postgres names a schema
// of its own in one throwaway PostgreSQL server for the whole package
// (internal/pgtest), so that reopening a path reopens the same journal,
// as with a file. Without PostgreSQL installed the postgres subtests are
// skipped, saying so.

// both runs body once per storage.
func both(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	t.Run("bbolt", body)
	t.Run("postgres", func(t *testing.T) {
		pgServer(t)
		body(t)
	})
}

// onPostgres reports whether t runs under both's "postgres" subtest.
func onPostgres(t testing.TB) bool {
	return slices.Contains(strings.Split(t.Name(), "/"), "postgres")
}

// mainTB lends pgtest.Start the TB it wants for a server that lives as
// long as the test binary: its cleanups run after every test (TestMain).
type mainTB struct {
	testing.TB // nil: only the methods below are called
	mu         sync.Mutex
	cleanups   []func()
	skip       string
	failed     string
}

func (m *mainTB) Helper()                   {}
func (m *mainTB) Cleanup(f func())          { m.mu.Lock(); m.cleanups = append(m.cleanups, f); m.mu.Unlock() }
func (m *mainTB) Skip(args ...any)          { m.skip = fmt.Sprint(args...); panic(m) }
func (m *mainTB) Fatal(args ...any)         { m.failed = fmt.Sprint(args...); panic(m) }
func (m *mainTB) Fatalf(f string, a ...any) { m.failed = fmt.Sprintf(f, a...); panic(m) }

func (m *mainTB) stop() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
}

var (
	serverTB   = &mainTB{}
	serverDSN  string
	serverOnce sync.Once
)

// pgServer returns the DSN of the package's PostgreSQL server, starting it
// on first use; it skips t when PostgreSQL is not installed.
func pgServer(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil && r != serverTB {
				panic(r)
			}
		}()
		serverDSN = pgtest.Start(serverTB)
	})
	switch {
	case serverTB.skip != "":
		t.Skip(serverTB.skip)
	case serverTB.failed != "":
		t.Fatalf("starting PostgreSQL: %s", serverTB.failed)
	}
	return serverDSN
}

// pgPaths are the journal "paths" opened under postgres, and their DSNs.
var pgPaths sync.Map

// pgDSNFor returns the DSN of the schema standing for path (created on
// first use).
func pgDSNFor(t testing.TB, path string) string {
	t.Helper()
	if dsn, ok := pgPaths.Load(path); ok {
		return dsn.(string)
	}
	server := pgServer(t)
	sum := sha256.Sum256([]byte(path))
	schema := "j_" + hex.EncodeToString(sum[:8])
	conn, err := pgx.Connect(context.Background(), server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		t.Fatal(err)
	}
	dsn := server + "&search_path=" + schema
	pgPaths.Store(path, dsn)
	return dsn
}

// openStorage opens the journal at path in the storage t runs under.
func openStorage(t testing.TB, path string, opts Options) (*Journal, error) {
	if onPostgres(t) {
		return OpenPostgres(pgDSNFor(t, path), opts)
	}
	return Open(path, opts)
}

// storedBytes returns every byte the journal at path stores: the file, or
// every row of its tables.
func storedBytes(t testing.TB, path string) []byte {
	t.Helper()
	dsn, ok := pgPaths.Load(path)
	if !ok {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	conn, err := pgx.Connect(context.Background(), dsn.(string))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var all []byte
	for _, q := range []string{
		"SELECT id::bytea || meta || convert_to(owner, 'UTF8') FROM agentos_journal_runs",
		"SELECT convert_to(run, 'UTF8') || entry FROM agentos_journal_entries",
		"SELECT convert_to(hash, 'UTF8') || data FROM agentos_journal_blobs",
		"SELECT convert_to(hash, 'UTF8') || source FROM agentos_journal_sources",
	} {
		rows, err := conn.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			all = append(append(all, v...), 0)
		}
	}
	return all
}
