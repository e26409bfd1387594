package driver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/pgtest"
)

// pgSetup starts a throwaway PostgreSQL, creates t(x) with one row and a
// login role "tools" with only the rights on t, and returns the DSN of the
// superuser "agent".
func pgSetup(t *testing.T) string {
	t.Helper()
	dsn := pgtest.Start(t)
	admin := pgOpen(t, dsn)
	for _, stmt := range []string{
		"CREATE TABLE t (x TEXT)",
		"INSERT INTO t VALUES ('one')",
		"CREATE ROLE tools LOGIN",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON t TO tools",
		"CREATE ROLE other NOLOGIN",
		"CREATE PROCEDURE sneaky_commit() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$",
		"GRANT EXECUTE ON PROCEDURE sneaky_commit() TO tools",
	} {
		if _, err := admin.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return dsn
}

func pgOpen(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func pgRows(t *testing.T, s *SQL) string {
	t.Helper()
	out, err := runOne(s, "SELECT string_agg(x, ',' ORDER BY x) AS xs FROM t")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// What a tool may and may not do on PostgreSQL, statement by statement,
// logged in as a role with only the rights on its table.
func TestPostgresPolicy(t *testing.T) {
	dsn := pgSetup(t)
	s := &SQL{DB: pgOpen(t, pgtest.DSNAs(dsn, "tools"))}
	// A directory the server (another user) may write into, so that only
	// the policy, not file permissions, can stop a server-side write.
	outside, err := os.MkdirTemp("", "agentos-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	os.Chmod(outside, 0o777)
	allowed := []struct {
		stmt   string
		params []any
		want   string
	}{
		{"SELECT x FROM t", nil, `"rows":[{"x":"one"}]`},
		{"SELECT x FROM t;", nil, `"x":"one"`},
		{"SELECT x FROM t; -- trailing", nil, `"x":"one"`},
		{"INSERT INTO t VALUES ($1)", []any{"two"}, `{"rows_affected":1}`},
		{"INSERT INTO t VALUES ('three') RETURNING x", nil, `"x":"three"`},
		{"UPDATE t SET x = $1 WHERE x = $2", []any{"3", "three"}, `{"rows_affected":1}`},
		{"DELETE FROM t WHERE x IN ('two', '3')", nil, `{"rows_affected":2}`},
		{"SELECT $1::int + 1 AS n, $2::float8 AS f, $3::bool AS b, $4::text AS s", []any{int64(41), 2.5, true, "x"}, `{"b":true,"f":2.5,"n":42,"s":"x"}`},
		{"SELECT '00000000-0000-0000-0000-000000000001'::uuid AS u, 12.50::numeric AS d, '{\"a\":[1]}'::jsonb AS j, ARRAY[1,2] AS a, '2026-06-03T10:00:00Z'::timestamptz AS ts", nil,
			`{"a":[1,2],"d":12.50,"j":{"a":[1]},"ts":"2026-06-03T10:00:00Z","u":"00000000-0000-0000-0000-000000000001"}`},
		{"WITH c AS (SELECT 1 AS n) SELECT n FROM c", nil, `"n":1`},
		{"SHOW search_path", nil, `"search_path"`},
		{"  /* c */ (SELECT 1 AS one)", nil, `"one":1`},
	}
	for _, c := range allowed {
		if out, err := runOne(s, c.stmt, c.params...); err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: %s %v, want %s", c.stmt, out, err, c.want)
		}
	}
	refused := []struct {
		stmt   string
		params []any
		want   string
	}{
		{"SELECT 1; DROP TABLE t", nil, "exec_sql: one statement per call: split"},
		{"SELECT $1::int; DROP TABLE t", []any{int64(1)}, "one statement per call"},
		{"INSERT INTO t VALUES ('bad'); SELECT 1", nil, "one statement per call"},
		{"BEGIN", nil, "transaction control is not allowed"},
		{"START TRANSACTION", nil, "transaction control is not allowed"},
		{"COMMIT", nil, "transaction control is not allowed"},
		{" /* a /* nested */ comment */ -- and one more\n commit", nil, "transaction control is not allowed"},
		{"END", nil, "transaction control is not allowed"},
		{"ABORT", nil, "transaction control is not allowed"},
		{"ROLLBACK", nil, "transaction control is not allowed"},
		{"SAVEPOINT a", nil, "transaction control is not allowed"},
		{"RELEASE SAVEPOINT a", nil, "transaction control is not allowed"},
		{"PREPARE TRANSACTION 'x'", nil, "PREPARE is not allowed"},
		{"PREPARE p AS SELECT 1", nil, "PREPARE is not allowed"},
		{"SET ROLE agent", nil, "SET and RESET are not allowed"},
		{"set local role agent", nil, "SET and RESET are not allowed"},
		{"SET SESSION AUTHORIZATION agent", nil, "SET and RESET are not allowed"},
		{"RESET ROLE", nil, "SET and RESET are not allowed"},
		{"COPY t TO '" + outside + "/t.csv'", nil, "COPY is not allowed"},
		{"COPY t FROM PROGRAM 'id'", nil, "COPY is not allowed"},
		{"COPY (SELECT 1) TO STDOUT", nil, "COPY is not allowed"},
		{"DO $$ BEGIN PERFORM 1; END $$", nil, "DO blocks are not allowed"},
		{"LOAD 'plpgsql'", nil, "LOAD is not allowed"},
		{"LISTEN ch", nil, "LISTEN and UNLISTEN are not allowed"},
		{"DISCARD ALL", nil, "DISCARD is not allowed"},
		// Server files and large objects: the role's rights refuse them.
		{"SELECT pg_read_file('/etc/hostname')", nil, "permission denied"},
		{"SELECT lo_import('/etc/hostname')", nil, "permission denied"},
		{"SELECT lo_export(0, '" + outside + "/lo')", nil, "permission denied"},
		{"CALL sneaky_commit()", nil, "invalid transaction termination"},
	}
	for _, c := range refused {
		_, err := runOne(s, c.stmt, c.params...)
		var e *Error
		if err == nil || !errors.As(err, &e) || !strings.Contains(e.Message, c.want) || strings.Contains(e.Message, "exec_sql: exec_sql:") {
			t.Errorf("%q: got %v, want an error containing %q", c.stmt, err, c.want)
		}
	}
	run := s.Open()
	_, err = run.Do(context.Background(), "exec", json.RawMessage(`{"sql":"SELECT x FROM t WHERE x = :x","params":{"x":"one"}}`))
	run.End(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL takes positional parameters only") {
		t.Errorf("named parameters on PostgreSQL: %v", err)
	}
	if got := pgRows(t, s); !strings.Contains(got, `"xs":"one"`) {
		t.Fatalf("t after the refusals: %s", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files appeared outside the database: %v", entries)
	}
}

// A run's transaction is the device's: a tool that writes, tries every way
// to commit, then fails, leaves nothing.
func TestPostgresRunTransaction(t *testing.T) {
	dsn := pgSetup(t)
	s := &SQL{DB: pgOpen(t, pgtest.DSNAs(dsn, "tools"))}
	ctx := context.Background()
	run := s.Open()
	if _, err := run.Do(ctx, "exec", json.RawMessage(`{"sql":"INSERT INTO t VALUES ($1)","params":["two"]}`)); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"COMMIT", "END", "COMMIT AND CHAIN", "CALL sneaky_commit()"} {
		if _, err := run.Do(ctx, "exec", json.RawMessage(`{"sql":"`+stmt+`"}`)); err == nil {
			t.Fatalf("%s inside a run was allowed", stmt)
		}
	}
	if err := run.End(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := pgRows(t, s); !strings.Contains(got, `"xs":"one"`) {
		t.Fatalf("after the failed run: %s", got)
	}
	// A statement that fails is undone alone: a tool that catches the
	// error goes on, and its run commits (as on SQLite).
	run = s.Open()
	for _, req := range []string{`{"sql":"INSERT INTO t VALUES ('two')"}`, `{"sql":"INSERT INTO nosuch VALUES (1)"}`, `{"sql":"SELECT pg_read_file('/etc/hostname')"}`, `{"sql":"INSERT INTO t VALUES ('three')"}`} {
		_, err := run.Do(ctx, "exec", json.RawMessage(req))
		if (err != nil) != (strings.Contains(req, "nosuch") || strings.Contains(req, "pg_read_file")) {
			t.Fatalf("%s: %v", req, err)
		}
	}
	if err := run.End(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := pgRows(t, s); !strings.Contains(got, `"xs":"one,three,two"`) {
		t.Fatalf("after a run that caught errors: %s", got)
	}
}

// The DSN cannot turn the simple protocol back on for tools: pgx's
// default_query_exec_mode does not reach a tool's statement.
func TestPostgresSimpleProtocolDSN(t *testing.T) {
	dsn := pgSetup(t)
	s := &SQL{DB: pgOpen(t, pgtest.DSNAs(dsn, "tools")+"&default_query_exec_mode=simple_protocol")}
	for _, c := range []struct {
		stmt   string
		params []any
	}{{"SELECT 1; DELETE FROM t", nil}, {"SELECT $1::int; DELETE FROM t", []any{int64(1)}}} {
		if _, err := runOne(s, c.stmt, c.params...); err == nil || !strings.Contains(err.Error(), "one statement per call") {
			t.Errorf("%s: %v", c.stmt, err)
		}
	}
	if got := pgRows(t, s); !strings.Contains(got, `"xs":"one"`) {
		t.Fatalf("t: %s", got)
	}
}

// sql.role: statements run as the tools' role (SET LOCAL ROLE), and the
// start-time check refuses roles that cannot serve and warns about logins
// that can reach the server's files.
func TestPostgresRole(t *testing.T) {
	dsn := pgSetup(t)
	ctx := context.Background()
	admin := pgOpen(t, dsn)
	s := &SQL{DB: admin, Role: "tools"}
	if out, err := runOne(s, "SELECT current_user AS u"); err != nil || !strings.Contains(out, `"u":"tools"`) {
		t.Fatalf("current_user with sql.role: %s %v", out, err)
	}
	if _, err := runOne(s, "SELECT pg_read_file('/etc/hostname')"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("pg_read_file as the tools' role: %v", err)
	}
	// After the run, the pooled connection is the login role again.
	var u string
	if err := admin.QueryRowContext(ctx, "SELECT current_user").Scan(&u); err != nil || u != "agent" {
		t.Fatalf("the pool after a run: %q %v", u, err)
	}

	warnings, err := PostgresCheck(ctx, admin, "")
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `login role "agent" is a superuser`) {
		t.Fatalf("superuser login: %q %v", warnings, err)
	}
	warnings, err = PostgresCheck(ctx, admin, "tools")
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "sql.role does not prevent it") {
		t.Fatalf("superuser login with sql.role: %q %v", warnings, err)
	}
	tools := pgOpen(t, pgtest.DSNAs(dsn, "tools"))
	if warnings, err := PostgresCheck(ctx, tools, ""); err != nil || len(warnings) != 0 {
		t.Fatalf("a least-privileged login: %q %v", warnings, err)
	}
	for _, c := range []struct {
		db         *sql.DB
		role, want string
	}{
		{admin, "nosuch", `sql.role names "nosuch", which does not exist`},
		{admin, "agent", "can reach the server's files or programs"},
		{tools, "other", `the login role "tools" may not act as it: GRANT "other" TO "tools"`},
	} {
		if _, err := PostgresCheck(ctx, c.db, c.role); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("role %q: %v, want %q", c.role, err, c.want)
		}
	}
}

// BenchmarkPostgresStatement measures one statement inside a run: the
// savepoint, Parse/Describe/Bind/Execute, the release.
func BenchmarkPostgresStatement(b *testing.B) {
	db, err := sql.Open("pgx", pgtest.Start(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := &SQL{DB: db}
	run := s.Open()
	defer run.End(context.Background(), false)
	req := json.RawMessage(`{"sql":"SELECT $1::int + 1 AS n","params":[1]}`)
	b.ResetTimer()
	for b.Loop() {
		if _, err := run.Do(context.Background(), "exec", req); err != nil {
			b.Fatal(err)
		}
	}
}
