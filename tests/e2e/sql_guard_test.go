package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/host"
)

// Issue 10 item 1: exec_sql is the tool's door to the database and nothing
// else. These tests are the attacks of the issue, run through the real
// runtime (Start on a temporary root, exec_tool through the kernel, the
// executor's per-run SQL session, the default SQLite file).

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// tsString quotes s as a TypeScript string literal.
func tsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// noFile fails the test when path exists.
func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists (or cannot be checked: %v): a tool wrote outside the database", path, err)
	}
}

// The exact attack of the issue: COMMIT out of the run's transaction,
// ATTACH a file outside the jail, write lines of the tool's choosing into
// it, DETACH, BEGIN again. It must create nothing and run nothing.
func TestSQLAttackAttachWritesOutside(t *testing.T) {
	for _, iso := range []string{"inprocess", "process"} {
		t.Run(iso, func(t *testing.T) {
			rt := sqlRuntime(t, iso)
			outside := filepath.Join(t.TempDir(), "outside.db")
			attack := "COMMIT; ATTACH DATABASE " + sqlString(outside) + " AS p; CREATE TABLE p.t(x TEXT); INSERT INTO p.t VALUES (char(10) || 'line chosen by the tool' || char(10)); DETACH DATABASE p; BEGIN"
			res := runTool(t, rt, "tools/attack.ts", `/** The issue's attack. */
export default async function (): Promise<string> {
  await tgp.exec_sql(`+tsString(attack)+`);
  return 'done';
}
`, `{}`)
			noFile(t, outside)
			if res.Success {
				t.Fatalf("the attack succeeded: %+v", res)
			}
			if !strings.Contains(res.Error.Message, "one statement per call") {
				t.Fatalf("the error should say exec_sql runs one statement per call: %q", res.Error.Message)
			}
			noFile(t, outside)
			// The same text through the kernel tool exec_sql.
			_, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":`+tsString(attack)+`}`))
			if err == nil || !strings.Contains(err.Error(), "one statement per call") {
				t.Fatalf("kernel exec_sql ran the attack: %v", err)
			}
			noFile(t, outside)
			// One statement at a time, each step is refused on its own.
			res = runTool(t, rt, "tools/attach.ts", `/** ATTACH alone. */
export default async function (): Promise<string> {
  await tgp.exec_sql(`+tsString("ATTACH DATABASE "+sqlString(outside)+" AS p")+`);
  return 'attached';
}
`, `{}`)
			if res.Success || !strings.Contains(res.Error.Message, "ATTACH is not allowed") || !strings.Contains(res.Error.Message, "only the configured database") {
				t.Fatalf("ATTACH alone: %+v", res)
			}
			noFile(t, outside)
			if got := count(t, rt); !strings.Contains(got, `"n":2`) {
				t.Fatalf("the database changed: %s", got)
			}
		})
	}
}

// VACUUM INTO copies the database to any path: refused, for tools and for
// the kernel tool.
func TestSQLVacuumIntoRefused(t *testing.T) {
	rt := sqlRuntime(t)
	outside := filepath.Join(t.TempDir(), "copy.db")
	stmt := "VACUUM INTO " + sqlString(outside)
	res := runTool(t, rt, "tools/vacuum.ts", `/** Copies the database away. */
export default async function (): Promise<string> {
  await tgp.exec_sql(`+tsString(stmt)+`);
  return 'copied';
}
`, `{}`)
	if res.Success || !strings.Contains(res.Error.Message, "not allowed") {
		t.Fatalf("VACUUM INTO from a tool: %+v", res)
	}
	noFile(t, outside)
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":`+tsString(stmt)+`}`)); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("VACUUM INTO through the kernel tool: %v", err)
	}
	noFile(t, outside)
}

// Several statements in one call are refused before any of them runs.
func TestSQLOneStatementPerCall(t *testing.T) {
	rt := sqlRuntime(t)
	res := runTool(t, rt, "tools/two.ts", `/** Two statements. */
export default async function (): Promise<unknown> {
  return await tgp.exec_sql("SELECT 1; DROP TABLE users");
}
`, `{}`)
	if res.Success || !strings.Contains(res.Error.Message, "one statement per call") || !strings.Contains(res.Error.Message, "split") {
		t.Fatalf("two statements from a tool: %+v", res)
	}
	if got := count(t, rt); !strings.Contains(got, `"n":2`) {
		t.Fatalf("users after the refused call: %s", got)
	}
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT 1; DROP TABLE users"}`)); err == nil || !strings.Contains(err.Error(), "one statement per call") {
		t.Fatalf("two statements through the kernel tool: %v", err)
	}
	if got := count(t, rt); !strings.Contains(got, `"n":2`) {
		t.Fatalf("users after the refused kernel call: %s", got)
	}
	// One statement with a trailing semicolon and comment is one statement.
	out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM users; -- how many\n"}`))
	if err != nil || !strings.Contains(string(out), `"n":2`) {
		t.Fatalf("a statement with a trailing comment: %s %v", out, err)
	}
}

// A tool's COMMIT does not defeat "a failing tool rolls back": the COMMIT
// is refused, the tool throws, its insert is gone.
func TestSQLToolCommitCannotDefeatRollback(t *testing.T) {
	for _, iso := range []string{"inprocess", "process"} {
		t.Run(iso, func(t *testing.T) {
			rt := sqlRuntime(t, iso)
			res := runTool(t, rt, "tools/commit.ts", `/** Inserts, tries to commit, then fails. */
export default async function (): Promise<void> {
  await tgp.exec_sql("INSERT INTO users (name, plan) VALUES (?, ?)", ["eve", "free"]);
  let refused = "";
  try { await tgp.exec_sql("COMMIT"); } catch (e) { refused = String((e as Error).message); }
  try { await tgp.exec_sql("END"); } catch (e) { refused += " | " + String((e as Error).message); }
  throw new Error("after the commit attempt: " + refused);
}
`, `{}`)
			if res.Success {
				t.Fatal("the tool succeeded")
			}
			if !strings.Contains(res.Error.Message, "transaction control is not allowed") {
				t.Fatalf("COMMIT should be refused with a clear error: %q", res.Error.Message)
			}
			if got := count(t, rt); !strings.Contains(got, `"n":2`) {
				t.Fatalf("after the failed run: %s, want the 2 original rows", got)
			}
		})
	}
}

// Issue 11 item 4: named parameters as an object.
func TestSQLNamedParams(t *testing.T) {
	rt := sqlRuntime(t)
	res := runTool(t, rt, "tools/named.ts", `/** By name, three spellings. */
export default async function (a: { name: string }): Promise<string> {
  const r1 = await tgp.exec_sql("SELECT plan FROM users WHERE name = :name", { name: a.name });
  const r2 = await tgp.exec_sql("SELECT plan FROM users WHERE name = @who", { who: a.name });
  const r3 = await tgp.exec_sql("SELECT plan FROM users WHERE name = $n AND plan = :plan", { n: a.name, plan: "free" });
  return [r1.rows[0].plan, r2.rows[0].plan, r3.rows[0].plan].join(",");
}
`, `{"name":"ada"}`)
	if !res.Success || string(res.Result.Result) != `"free,free,free"` {
		t.Fatalf("named parameters: %+v", res)
	}
	out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT plan FROM users WHERE name = :name","params":{"name":"bob"}}`))
	if err != nil || !strings.Contains(string(out), `"plan":"pro"`) {
		t.Fatalf("kernel exec_sql with named parameters: %s %v", out, err)
	}
	// A parameter the statement does not name is an error, not ignored.
	_, err = rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT plan FROM users WHERE name = :name","params":{"name":"bob","nmae":"x"}}`))
	if err == nil || !strings.Contains(err.Error(), "nmae") {
		t.Fatalf("an unused named parameter: %v", err)
	}
}

// An error says exec_sql once.
func TestSQLErrorPrefixOnce(t *testing.T) {
	rt := sqlRuntime(t)
	_, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELEC 1"}`))
	if err == nil || strings.Contains(err.Error(), "exec_sql: exec_sql:") || !strings.Contains(err.Error(), "exec_sql: ") {
		t.Fatalf("kernel exec_sql error: %v", err)
	}
}

// A runaway query (an endless recursive CTE) ends with its run: SQLite is
// interrupted at the run's deadline, the run reports its timeout, and the
// database serves the next call.
func TestSQLRunawayQueryEndsWithRun(t *testing.T) {
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", Limits: host.LimitsConfig{Timeout: host.Duration(time.Second)}})
	if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"CREATE TABLE users (name TEXT)"}`)); err != nil {
		t.Fatal(err)
	}
	res := runTool(t, rt, "tools/forever.ts", `/** Counts forever. */
export default async function (): Promise<unknown> {
  await tgp.exec_sql("INSERT INTO users VALUES ('x')");
  return await tgp.exec_sql("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) AS n FROM c");
}
`, `{}`)
	if res.Success || res.Error == nil {
		t.Fatalf("an endless query succeeded: %+v", res)
	}
	out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM users"}`))
	if err != nil || !strings.Contains(string(out), `"n":0`) {
		t.Fatalf("after the runaway run: %s %v", out, err)
	}
}

// A value or an answer larger than a call can carry is refused by SQLite
// (SQLITE_LIMIT_LENGTH) or by the device before the host holds it.
func TestSQLHugeValuesRefused(t *testing.T) {
	rt := sqlRuntime(t)
	for _, stmt := range []string{
		"SELECT length(zeroblob(200000000)) AS n",
		"SELECT length(printf('%.*c', 200000000, 'x')) AS n",
		"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100) SELECT randomblob(1000000) AS b FROM c",
	} {
		_, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":`+tsString(stmt)+`}`))
		if err == nil || !strings.Contains(err.Error(), "too big") && !strings.Contains(err.Error(), "more than 64 MiB") {
			t.Errorf("%s: %v", stmt, err)
		}
	}
}
