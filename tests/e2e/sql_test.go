package e2e_test

import (
	"context"
	"encoding/json"
	"github.com/agentos-run/agentos/actors/executor"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltools"
)

func sqlRuntime(t *testing.T, isolation ...string) *host.Runtime {
	t.Helper()
	iso := "inprocess"
	if len(isolation) > 0 {
		iso = isolation[0]
	}
	cfg := host.Config{Root: t.TempDir(), Isolation: iso}
	// These tests run hostile SQL tools (DROP TABLE, ATTACH, a literal
	// check_tool takes for a credential) to prove the driver's guards; the
	// approval gate would hold them first (docs/GOVERNANCE.md).
	cfg.Governance.Approval.Off = true
	rt := start(t, cfg)
	for _, stmt := range []string{
		`{"sql":"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, plan TEXT, changed TEXT)"}`,
		`{"sql":"INSERT INTO users (name, plan, changed) VALUES (?, ?, ?), (?, ?, ?)","params":["ada","free","2026-06-03","bob","pro","2026-05-01"]}`,
	} {
		if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	return rt
}

func runTool(t *testing.T, rt *host.Runtime, path, src, args string) kerneltools.ExecResult {
	t.Helper()
	write(t, rt, path, src)
	out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"`+path+`","args":`+args+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var res kerneltools.ExecResult
	_ = json.Unmarshal(out, &res)
	return res
}

func count(t *testing.T, rt *host.Runtime) string {
	t.Helper()
	out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM users"}`))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// A tool queries with bound parameters; the rows come back as objects.
func TestSQLQuery(t *testing.T) {
	rt := sqlRuntime(t)
	res := runTool(t, rt, "tools/report.ts", `/** Users on a plan, pipe-delimited. */
export default async function (a: { plan: string }): Promise<string> {
  const r = await tgp.exec_sql("SELECT name, changed FROM users WHERE plan = ? ORDER BY name", [a.plan]);
  return r.rows.map((u: { name: string; changed: string }) => u.name + "|" + u.changed).join("\n");
}
`, `{"plan":"free"}`)
	if !res.Success || string(res.Result.Result) != `"ada|2026-06-03"` {
		t.Fatalf("report: %+v", res)
	}
	// Parameters are bound, never interpolated.
	res = runTool(t, rt, "tools/report2.ts", `/** Same, by name. */
export default async function (a: { name: string }): Promise<number> {
  const r = await tgp.exec_sql("SELECT count(*) AS n FROM users WHERE name = ?", [a.name]);
  return r.rows[0].n;
}
`, `{"name":"x' OR '1'='1"}`)
	if !res.Success || string(res.Result.Result) != "0" {
		t.Fatalf("an injection attempt matched rows: %+v", res)
	}
}

// The seed's "transaction safety": a tool inserts then throws; the row is
// absent and the existing rows are intact.
func TestSQLRollbackOnThrow(t *testing.T) {
	for _, iso := range []string{"inprocess", "process"} {
		t.Run(iso, func(t *testing.T) { testRollback(t, sqlRuntime(t, iso)) })
	}
}

func testRollback(t *testing.T, rt *host.Runtime) {
	res := runTool(t, rt, "tools/bad.ts", `/** Inserts then fails. */
export default async function (): Promise<void> {
  await tgp.exec_sql("INSERT INTO users (name, plan) VALUES (?, ?)", ["eve", "free"]);
  throw new Error("something went wrong after the insert");
}
`, `{}`)
	if res.Success {
		t.Fatal("the tool succeeded")
	}
	if got := count(t, rt); !strings.Contains(got, `"n":2`) {
		t.Fatalf("after the rollback: %s, want the 2 original rows", got)
	}
	// The same insert in a tool that succeeds is committed.
	res = runTool(t, rt, "tools/good.ts", `/** Inserts. */
export default async function (): Promise<number> {
  const r = await tgp.exec_sql("INSERT INTO users (name, plan) VALUES (?, ?)", ["eve", "free"]);
  return r.rows_affected;
}
`, `{}`)
	if !res.Success || !strings.Contains(count(t, rt), `"n":3`) {
		t.Fatalf("commit: %+v %s", res, count(t, rt))
	}
}

// The seed's "SQL error propagation": the tool's error names the SQL
// failure.
func TestSQLErrorPropagates(t *testing.T) {
	rt := sqlRuntime(t)
	res := runTool(t, rt, "tools/typo.ts", `/** Has a typo. */
export default async function (): Promise<unknown> {
  return await tgp.exec_sql("SELEC name FROM users", []);
}
`, `{}`)
	if res.Success || !strings.Contains(res.Error.Message, "SELEC") || !strings.Contains(res.Error.Message, "syntax error") {
		t.Fatalf("the error should name the SQL failure: %+v", res.Error)
	}
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"INSERT INTO users (plan) VALUES ('x')"}`)); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("kernel exec_sql constraint error: %v", err)
	}
}

// PostgreSQL is reached through pgx when the DSN variable is set; an
// unreachable database is a clear error that never shows the password.
func TestPostgresDSN(t *testing.T) {
	t.Setenv("TEST_PG_DSN", "postgres://agent:hunter2@127.0.0.1:1/tools?connect_timeout=2")
	_, err := host.Start(context.Background(), host.Config{Root: t.TempDir(), Isolation: "inprocess", Logger: quiet, SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN"}})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the PostgreSQL database in TEST_PG_DSN") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("unreachable PostgreSQL: %v", err)
	}
	_, err = host.Start(context.Background(), host.Config{Root: t.TempDir(), Isolation: "inprocess", Logger: quiet, SQL: host.SQLConfig{PostgresDSNEnv: "TEST_PG_UNSET"}})
	if err == nil || !strings.Contains(err.Error(), "TEST_PG_UNSET, which is not set") {
		t.Fatalf("unset DSN variable: %v", err)
	}
}

// A run that used SQL is not resumed after a crash: its transaction died
// with the process, so replaying the recorded statements would skip writes.
func TestSQLRunNotResumed(t *testing.T) {
	rt := sqlRuntime(t)
	write(t, rt, "tools/w.ts", "/** Writes. */\nexport default async function (): Promise<number> { const r = await tgp.exec_sql(\"INSERT INTO users (name) VALUES (?)\", [\"zed\"]); return r.rows_affected; }\n")
	j := rt.Journal()
	// A crashed run: begun, one SQL call recorded, never ended.
	src, hash, err := rt.Executor().Source("tools/w.ts")
	if err != nil {
		t.Fatal(err)
	}
	_ = j.PutSource(hash, src)
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/w.ts", Hash: hash})
	if err != nil {
		t.Fatal(err)
	}
	dh := driver.Chain(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"rows_affected":1}`), nil
	}), run.Durable().Middleware()) // committed, as a recorded call is after a crash
	if _, err := dh.Do(context.Background(), driver.Call{Seq: 1, Driver: driver.SQLDriver, Op: "exec", Request: json.RawMessage(`{"sql":"INSERT INTO users (name) VALUES (?)","params":["zed"]}`)}); err != nil {
		t.Fatal(err)
	}
	reps, err := executor.Recover(context.Background(), rt.Executor(), j)
	if err != nil || len(reps) != 1 || reps[0].Resumed || !strings.Contains(reps[0].Reason, "used SQL") {
		t.Fatalf("recover: %+v %v", reps, err)
	}
}
