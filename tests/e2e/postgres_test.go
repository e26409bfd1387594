package e2e_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/pgtest"
)

// startPostgres runs a throwaway PostgreSQL server (see internal/pgtest)
// and returns its DSN.
func startPostgres(t testing.TB) string { return pgtest.Start(t) }

// exec_sql against a real PostgreSQL through pgx: bound $n parameters,
// and a tool's transaction rolled back when it throws.
func TestPostgres(t *testing.T) {
	t.Setenv("TEST_PG_DSN", startPostgres(t))
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN"}})
	for _, stmt := range []string{
		`{"sql":"CREATE TABLE users (id SERIAL PRIMARY KEY, name TEXT NOT NULL, plan TEXT)"}`,
		`{"sql":"INSERT INTO users (name, plan) VALUES ($1, $2), ($3, $4)","params":["ada","free","bob","pro"]}`,
	} {
		if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	res := runTool(t, rt, "tools/pg.ts", `/** Names on a plan. */
export default async function (a: { plan: string }): Promise<string> {
  const r = await tgp.exec_sql("SELECT name FROM users WHERE plan = $1 ORDER BY name", [a.plan]);
  return r.rows.map((u: { name: string }) => u.name).join(",");
}
`, `{"plan":"free"}`)
	if !res.Success || string(res.Result.Result) != `"ada"` {
		t.Fatalf("query: %+v", res)
	}
	res = runTool(t, rt, "tools/pgbad.ts", `/** Inserts then fails. */
export default async function (): Promise<void> {
  await tgp.exec_sql("INSERT INTO users (name, plan) VALUES ($1, $2)", ["eve", "free"]);
  throw new Error("after the insert");
}
`, `{}`)
	if res.Success {
		t.Fatal("the failing tool succeeded")
	}
	out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM users"}`))
	if err != nil || !strings.Contains(string(out), `"n":2`) {
		t.Fatalf("after the rollback: %s %v", out, err)
	}
}

// Issue 10 item 1 on PostgreSQL, through the runtime: one statement per
// call, no transaction control, no COPY to the server's files, and a
// superuser login is warned about at start.
func TestPostgresToolGuards(t *testing.T) {
	dsn := startPostgres(t)
	t.Setenv("TEST_PG_DSN", dsn)
	var logs lockedBuffer
	cfg := host.Config{Root: t.TempDir(), Isolation: "inprocess", Logger: slog.New(slog.NewTextHandler(&logs, nil)), SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN"}}
	cfg.Governance.Approval.Off = true // hostile SQL tools prove the guards; the approval gate would hold them first
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if !strings.Contains(logs.String(), `login role \"agent\" is a superuser`) {
		t.Fatalf("no warning about the superuser login at start:\n%s", logs.String())
	}
	for _, stmt := range []string{
		`{"sql":"CREATE TABLE users (id SERIAL PRIMARY KEY, name TEXT NOT NULL, plan TEXT)"}`,
		`{"sql":"INSERT INTO users (name, plan) VALUES ($1, $2), ($3, $4)","params":["ada","free","bob","pro"]}`,
	} {
		if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	users := func() string {
		t.Helper()
		out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM users"}`))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	res := runTool(t, rt, "tools/pgtwo.ts", `/** Two statements. */
export default async function (): Promise<unknown> {
  return await tgp.exec_sql("INSERT INTO users (name) VALUES ('mallory'); DROP TABLE users");
}
`, `{}`)
	if res.Success || !strings.Contains(res.Error.Message, "one statement per call") {
		t.Fatalf("two statements: %+v", res)
	}
	if got := users(); !strings.Contains(got, `"n":2`) {
		t.Fatalf("users after two statements: %s", got)
	}
	res = runTool(t, rt, "tools/pgcommit.ts", `/** Inserts, tries to commit, then fails. */
export default async function (): Promise<void> {
  await tgp.exec_sql("INSERT INTO users (name, plan) VALUES ($1, $2)", ["eve", "free"]);
  try { await tgp.exec_sql("COMMIT"); } catch (e) { throw new Error("refused: " + String((e as Error).message)); }
  throw new Error("the commit went through");
}
`, `{}`)
	if res.Success || !strings.Contains(res.Error.Message, "transaction control is not allowed") {
		t.Fatalf("COMMIT in a run: %+v", res)
	}
	if got := users(); !strings.Contains(got, `"n":2`) {
		t.Fatalf("users after the failed run: %s", got)
	}
	outside := serverWritableDir(t) // the server could write here: only the policy stops it
	res = runTool(t, rt, "tools/pgcopy.ts", `/** Copies the table to a server file. */
export default async function (): Promise<unknown> {
  return await tgp.exec_sql(`+tsString("COPY users TO "+sqlString(outside+"/users.csv"))+`);
}
`, `{}`)
	if res.Success || !strings.Contains(res.Error.Message, "COPY is not allowed") {
		t.Fatalf("COPY TO a file: %+v", res)
	}
	noFile(t, filepath.Join(outside, "users.csv"))
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT name FROM users WHERE name = :n","params":{"n":"ada"}}`)); err == nil || !strings.Contains(err.Error(), "positional parameters only") {
		t.Fatalf("named parameters on PostgreSQL: %v", err)
	}
}

// sql.role: tool statements run as that role, which reaches no server
// file; a role that does not exist stops the start with a clear error.
func TestPostgresSQLRole(t *testing.T) {
	dsn := startPostgres(t)
	t.Setenv("TEST_PG_DSN", dsn)
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN"}})
	for _, stmt := range []string{"CREATE TABLE notes (body TEXT)", "CREATE ROLE tools NOLOGIN", "GRANT SELECT, INSERT ON notes TO tools"} {
		if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":`+tsString(stmt)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	rt2 := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN", Role: "tools"}})
	res := runTool(t, rt2, "tools/who.ts", `/** Who runs the statements. */
export default async function (): Promise<string> {
  await tgp.exec_sql("INSERT INTO notes VALUES ($1)", ["hello"]);
  const r = await tgp.exec_sql("SELECT current_user AS u, count(*) AS n FROM notes");
  let denied = "";
  try { await tgp.exec_sql("SELECT pg_read_file('/etc/hostname')"); } catch (e) { denied = String((e as Error).message); }
  return r.rows[0].u + "|" + r.rows[0].n + "|" + denied;
}
`, `{}`)
	if !res.Success || !strings.Contains(string(res.Result.Result), `tools|1|`) || !strings.Contains(string(res.Result.Result), "permission denied") {
		t.Fatalf("a tool under sql.role: %+v %s", res, res.Result.Result)
	}
	_, err := host.Start(context.Background(), host.Config{Root: t.TempDir(), Isolation: "inprocess", Logger: quiet, SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN", Role: "nosuch"}})
	if err == nil || !strings.Contains(err.Error(), `sql.role names "nosuch", which does not exist`) {
		t.Fatalf("a missing sql.role: %v", err)
	}
	_, err = host.Start(context.Background(), host.Config{Root: t.TempDir(), Isolation: "inprocess", Logger: quiet, SQL: host.SQLConfig{Role: "tools"}})
	if err == nil || !strings.Contains(err.Error(), "sql.role applies to PostgreSQL only") {
		t.Fatalf("sql.role with SQLite: %v", err)
	}
}

// serverWritableDir returns a directory the PostgreSQL server (another
// user) can write into, so that a write refused there was refused by
// agentos, not by file permissions.
func serverWritableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentos-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
