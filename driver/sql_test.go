package driver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// sqliteDevice opens a real SQLite file the way the runtime does and
// returns the device with a table t(x) of one row.
func sqliteDevice(t *testing.T) (*SQL, *sql.DB) {
	t.Helper()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "state", "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &SQL{DB: db}
	for _, stmt := range []string{"CREATE TABLE t (x TEXT)", "INSERT INTO t VALUES ('one')"} {
		if _, err := s.Exec(context.Background(), SQLRequest{SQL: stmt}); err != nil {
			t.Fatal(err)
		}
	}
	return s, db
}

// runOne runs stmt as a tool run of its own (Open, Do, End with the
// statement's outcome) and returns the answer or the error.
func runOne(s *SQL, stmt string, params ...any) (string, error) {
	req, _ := json.Marshal(SQLRequest{SQL: stmt, Params: params})
	run := s.Open()
	out, err := run.Do(context.Background(), "exec", req)
	if endErr := run.End(context.Background(), err == nil); err == nil && endErr != nil {
		err = endErr
	}
	return string(out), err
}

func rowsOf(t *testing.T, s *SQL) string {
	t.Helper()
	out, err := runOne(s, "SELECT group_concat(x, ',') AS xs FROM t")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// What a tool may and may not do on SQLite, statement by statement. Each
// refusal names what was refused; none leaves a trace.
func TestSQLitePolicy(t *testing.T) {
	s, _ := sqliteDevice(t)
	outside := t.TempDir()
	allowed := []string{
		"SELECT x FROM t",
		"INSERT INTO t VALUES ('two')",
		"UPDATE t SET x = x WHERE x = 'two'",
		"DELETE FROM t WHERE x = 'two'",
		"CREATE TABLE u (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)",
		"INSERT INTO u (v) VALUES ('a') RETURNING id",
		"CREATE INDEX u_v ON u (v)",
		"CREATE VIEW uv AS SELECT v FROM u",
		"CREATE TRIGGER u_ins AFTER INSERT ON u BEGIN UPDATE u SET v = upper(v) WHERE id = new.id; END",
		"ALTER TABLE u ADD COLUMN w TEXT",
		"PRAGMA table_info(u)",
		"PRAGMA main.table_xinfo(u)",
		"PRAGMA index_list(u)",
		"PRAGMA foreign_key_list(u)",
		"PRAGMA table_list",
		"SELECT name FROM pragma_table_info('u')",
		"SELECT name, sql FROM sqlite_master",
		"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT sum(n) AS s FROM c",
		"EXPLAIN QUERY PLAN SELECT * FROM u WHERE v = 'a'",
		"CREATE VIRTUAL TABLE docs USING fts5(body)",
		"INSERT INTO docs (body) VALUES ('the quick brown fox')",
		"SELECT body FROM docs WHERE docs MATCH 'quick'",
		"CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx)",
		"ANALYZE",
		"REINDEX u",
		"SELECT json_extract('{\"a\":1}', '$.a') AS a",
		"DROP TRIGGER u_ins",
		"DROP VIEW uv",
		"SELECT 1;",
		"SELECT 1; -- trailing comment",
		"  ;; SELECT 1 ;; /* trailing */ ",
	}
	for _, stmt := range allowed {
		if out, err := runOne(s, stmt); err != nil {
			t.Errorf("%s: refused: %v", stmt, err)
		} else if strings.Contains(stmt, "MATCH") && !strings.Contains(out, "quick brown") {
			t.Errorf("%s: %s", stmt, out)
		}
	}
	refused := []struct{ stmt, want string }{
		{"ATTACH DATABASE '" + outside + "/a.db' AS a", "ATTACH is not allowed: tools reach only the configured database"},
		{"ATTACH ':memory:' AS m", "ATTACH is not allowed"},
		{"DETACH DATABASE main", "ATTACH is not allowed"},
		{"VACUUM", "VACUUM is not allowed"},
		{"VACUUM INTO '" + outside + "/copy.db'", "VACUUM is not allowed"},
		{"BEGIN", "transaction control is not allowed"},
		{"BEGIN IMMEDIATE", "transaction control is not allowed"},
		{"COMMIT", "transaction control is not allowed"},
		{"END", "transaction control is not allowed"},
		{"ROLLBACK", "transaction control is not allowed"},
		{"SAVEPOINT sp", "transaction control is not allowed"},
		{"RELEASE sp", "transaction control is not allowed"},
		{"PRAGMA writable_schema = 1", "PRAGMA writable_schema is not allowed"},
		{"PRAGMA journal_mode = DELETE", "PRAGMA journal_mode is not allowed"},
		{"PRAGMA user_version = 5", "PRAGMA user_version is not allowed"},
		{"PRAGMA user_version", "PRAGMA user_version is not allowed"},
		{"PRAGMA database_list", "PRAGMA database_list is not allowed"},
		{"SELECT * FROM pragma_database_list", "PRAGMA database_list is not allowed"},
		{"PRAGMA temp_store_directory = '" + outside + "'", "is not allowed"},
		{"PRAGMA page_size = 1024", "PRAGMA page_size is not allowed"},
		{"PRAGMA foreign_keys = OFF", "PRAGMA foreign_keys is not allowed"},
		{"PRAGMA trusted_schema = ON", "PRAGMA trusted_schema is not allowed"},
		{"SELECT load_extension('" + outside + "/evil.so')", "load_extension is not allowed"},
		{"CREATE TEMP TABLE scratch (a)", "temporary tables, indexes, views and triggers are not allowed"},
		{"CREATE TEMPORARY VIEW tv AS SELECT 1", "temporary tables"},
		{"CREATE TEMP TRIGGER spy AFTER INSERT ON main.t BEGIN SELECT 1; END", "temporary tables"},
		{"SELECT count(*) FROM sqlite_dbpage", "sqlite_dbpage is not available to tools"},
		{"SELECT count(*) FROM dbstat", "dbstat is not available to tools"},
		{"CREATE VIRTUAL TABLE pages USING dbstat", "USING dbstat is not allowed"},
		{"INSERT INTO sqlite_master VALUES ('table', 'x', 'x', 0, 'CREATE TABLE x(y)')", "may not be modified"},
		{"SELECT 1; DROP TABLE t", "exec_sql: one statement per call: split"},
		{"INSERT INTO t VALUES ('bad'); SELECT 1", "one statement per call"},
		{"SELECT ';'; DROP TABLE t", "one statement per call"},
		{"CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN DELETE FROM t; END; DROP TABLE t", "one statement per call"},
		{"SELECT 1 /* ; */; DROP TABLE t", "one statement per call"},
		{"SELECT 1\x00; DROP TABLE t", "NUL byte"},
		{"", "the statement is empty"},
		{" ;; -- nothing\n", "the statement is empty"},
	}
	for _, c := range refused {
		_, err := runOne(s, c.stmt)
		var e *Error
		if err == nil || !errors.As(err, &e) || !strings.Contains(e.Message, c.want) || !strings.HasPrefix(e.Message, "exec_sql: ") || strings.HasPrefix(e.Message, "exec_sql: exec_sql:") {
			t.Errorf("%q: got %v, want an error containing %q", c.stmt, err, c.want)
		}
		if e != nil && strings.Contains(c.want, "not allowed") && e.Code != CodeSecurity {
			t.Errorf("%q: code %q, want %q", c.stmt, e.Code, CodeSecurity)
		}
	}
	if got := rowsOf(t, s); !strings.Contains(got, `"xs":"one"`) {
		t.Fatalf("t after the refusals: %s", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files appeared outside the database: %v", entries)
	}
	// A view can hide a refused function; selecting from it is refused
	// (by the authorizer or, first, by SQLite's untrusted-schema rule).
	if _, err := runOne(s, "CREATE VIEW sneaky AS SELECT load_extension('x') AS l"); err == nil {
		if _, err := runOne(s, "SELECT * FROM sneaky"); err == nil || !strings.Contains(err.Error(), "load_extension is not allowed") && !strings.Contains(err.Error(), "unsafe use of load_extension") {
			t.Fatalf("a view calling load_extension: %v", err)
		}
	}
}

// The pool itself fails closed: a connection used without a run (here the
// *sql.DB directly) refuses ATTACH, VACUUM INTO and BEGIN too.
func TestSQLitePoolFailsClosed(t *testing.T) {
	_, db := sqliteDevice(t)
	outside := t.TempDir()
	for _, stmt := range []string{
		"ATTACH DATABASE '" + outside + "/a.db' AS a",
		"VACUUM INTO '" + outside + "/copy.db'",
		"PRAGMA writable_schema = 1",
	} {
		if _, err := db.Exec(stmt); err == nil || !strings.Contains(err.Error(), "not authorized") && !strings.Contains(err.Error(), "authorization denied") {
			t.Errorf("%s on the pool: %v", stmt, err)
		}
	}
	if tx, err := db.Begin(); err == nil {
		tx.Rollback()
		t.Error("BEGIN on the pool was allowed")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files appeared outside the database: %v", entries)
	}
}

// A tool that writes, tries to commit, and fails leaves nothing; the same
// without the failure commits.
func TestSQLiteRunTransaction(t *testing.T) {
	s, _ := sqliteDevice(t)
	ctx := context.Background()
	run := s.Open()
	if _, err := run.Do(ctx, "exec", json.RawMessage(`{"sql":"INSERT INTO t VALUES (?)","params":["two"]}`)); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"COMMIT", "END TRANSACTION", "ROLLBACK", "SAVEPOINT x", "RELEASE x"} {
		if _, err := run.Do(ctx, "exec", json.RawMessage(`{"sql":"`+stmt+`"}`)); err == nil || !strings.Contains(err.Error(), "transaction control is not allowed") {
			t.Fatalf("%s inside a run: %v", stmt, err)
		}
	}
	// The run's own transaction still holds the row, and still rolls back.
	if out, err := run.Do(ctx, "exec", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM t"}`)); err != nil || !strings.Contains(string(out), `"n":2`) {
		t.Fatalf("inside the run: %s %v", out, err)
	}
	if err := run.End(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, s); !strings.Contains(got, `"xs":"one"`) {
		t.Fatalf("after the failed run: %s", got)
	}
	run = s.Open()
	if _, err := run.Do(ctx, "exec", json.RawMessage(`{"sql":"INSERT INTO t VALUES (:v)","params":{"v":"two"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := run.End(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, s); !strings.Contains(got, `"xs":"one,two"`) {
		t.Fatalf("after the successful run: %s", got)
	}
}

// Parameters: an array binds ?, an object binds :name, @name and $name;
// anything else is a clear error, and no parameter is dropped silently.
func TestSQLParams(t *testing.T) {
	s, _ := sqliteDevice(t)
	ctx := context.Background()
	ok := []struct{ req, want string }{
		{`{"sql":"SELECT ? AS a, ? AS b, ? AS c, ? AS d","params":["s",3,2.5,true]}`, `{"columns":["a","b","c","d"],"rows":[{"a":"s","b":3,"c":2.5,"d":1}]}`},
		{`{"sql":"SELECT typeof(?) AS t","params":[3]}`, `"t":"integer"`},
		{`{"sql":"SELECT :a AS a, @b AS b, $c AS c","params":{"a":1,"b":"two","c":null}}`, `{"a":1,"b":"two","c":null}`},
		{`{"sql":"SELECT :a || ':b' AS a","params":{"a":"x"}}`, `"a":"x:b"`},
		{`{"sql":"SELECT 1 AS one","params":null}`, `"one":1`},
	}
	for _, c := range ok {
		run := s.Open()
		out, err := run.Do(ctx, "exec", json.RawMessage(c.req))
		run.End(ctx, true)
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %s %v, want %s", c.req, out, err, c.want)
		}
	}
	bad := []struct{ req, want string }{
		{`{"sql":"SELECT ?","params":"x"}`, "params must be an array"},
		{`{"sql":"SELECT ?","params":[{"a":1}]}`, "params[0]: a parameter must be a string, a number, a boolean or null"},
		{`{"sql":"SELECT :a","params":{"a":[1]}}`, "params.a: a parameter must be"},
		{`{"sql":"SELECT :a","params":{"a":1,"nmae":2}}`, "params names nmae, which the statement does not use"},
		{`{"sql":"SELECT ':nmae', :a","params":{"a":1,"nmae":2}}`, "params names nmae"},
		{`{"sql":"SELECT :a","params":{}}`, `missing named argument "a"`},
		{`{"sql":"SELECT 1","parms":[1]}`, `unknown field "parms"`},
	}
	for _, c := range bad {
		run := s.Open()
		_, err := run.Do(ctx, "exec", json.RawMessage(c.req))
		run.End(ctx, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "exec_sql: exec_sql:") {
			t.Errorf("%s: %v, want %q", c.req, err, c.want)
		}
	}
	// The request writes back as it was read.
	for _, in := range []string{`{"sql":"SELECT ?","params":[1,"a"]}`, `{"sql":"SELECT :a","params":{"a":true}}`, `{"sql":"SELECT 1"}`} {
		var q SQLRequest
		if err := json.Unmarshal([]byte(in), &q); err != nil {
			t.Fatal(err)
		}
		if out, _ := json.Marshal(q); string(out) != in {
			t.Errorf("round trip: %s -> %s", in, out)
		}
	}
}

// The boundary of the first statement, as SQLite's parser sees it.
func TestSplitStatement(t *testing.T) {
	cases := []struct {
		src, first string
		more       bool
	}{
		{"SELECT 1", "SELECT 1", false},
		{"SELECT 1;", "SELECT 1;", false},
		{"SELECT 1; ", "SELECT 1;", false},
		{"SELECT 1; -- done", "SELECT 1;", false},
		{"SELECT 1; /* c */ ;;", "SELECT 1;", false},
		{" ;; /* x */ SELECT 1", "SELECT 1", false},
		{"SELECT 1; SELECT 2", "SELECT 1;", true},
		{"SELECT ';'; SELECT 2", "SELECT ';';", true},
		{"SELECT 'a;b'", "SELECT 'a;b'", false},
		{"SELECT 'it''s;'", "SELECT 'it''s;'", false},
		{`SELECT "a;b", [c;d], ` + "`e;f`", `SELECT "a;b", [c;d], ` + "`e;f`", false},
		{"SELECT 1 -- ; DROP TABLE t", "SELECT 1 -- ; DROP TABLE t", false},
		{"SELECT 1 -- c\n; DROP TABLE t", "SELECT 1 -- c\n;", true},
		{"SELECT 1 /* ; */; DROP TABLE t", "SELECT 1 /* ; */;", true},
		{"SELECT 'unterminated; DROP TABLE t", "SELECT 'unterminated; DROP TABLE t", false},
		{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM u; END", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM u; END", false},
		{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM u; END; DROP TABLE t", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM u; END;", true},
		{"create temporary trigger tr after insert on t begin delete from u; delete from v; end ;", "create temporary trigger tr after insert on t begin delete from u; delete from v; end ;", false},
		{"EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END; SELECT 2", "EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;", true},
		{"CREATE TABLE trigger_log (end_at TEXT); SELECT 1", "CREATE TABLE trigger_log (end_at TEXT);", true},
		{"-- only a comment", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		first, more := splitStatement(c.src)
		if first != c.first || more != c.more {
			t.Errorf("splitStatement(%q) = %q, %v; want %q, %v", c.src, first, more, c.first, c.more)
		}
	}
}

// FuzzSplitStatement checks the splitter against SQLite's own parser:
// whatever sits between two INSERTs, when the splitter says the text is one
// statement, running what it hands to SQLite inserts at most one row.
func FuzzSplitStatement(f *testing.F) {
	for _, seed := range []string{";", " ", "-- x\n;", "/* ; */;", "';'", "; CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;", "[;]", "`;`", "\";\"", " end;", " /* ", "'", "--", "\n;\n", "; ;", "x'00';"} {
		f.Add(seed)
	}
	db, err := sql.Open("sqlite", ":memory:") // one connection: one database
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, middle string) {
		if strings.IndexByte(middle, 0) >= 0 {
			return // refused before splitting
		}
		src := "INSERT INTO t VALUES (1)" + middle + "INSERT INTO t VALUES (2)"
		first, more := splitStatement(src)
		if !strings.Contains(src, first) {
			t.Fatalf("splitStatement(%q) = %q, not a part of the text", src, first)
		}
		if more {
			return
		}
		if _, err := db.Exec("DELETE FROM t"); err != nil {
			t.Fatal(err)
		}
		_, _ = db.Exec(first) // may well be a syntax error
		var n int
		if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 1 {
			t.Fatalf("splitStatement(%q) said one statement, but %q inserted %d rows", src, first, n)
		}
	})
}

// BenchmarkSQLiteRun measures one tool run of one statement: a pooled
// connection, the run's authorizer and limits, BEGIN, the statement (split,
// authorized, run), COMMIT.
func BenchmarkSQLiteRun(b *testing.B) {
	db, err := OpenSQLite(filepath.Join(b.TempDir(), "data.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := &SQL{DB: db}
	if _, err := s.Exec(context.Background(), SQLRequest{SQL: "CREATE TABLE t (x TEXT)"}); err != nil {
		b.Fatal(err)
	}
	req := json.RawMessage(`{"sql":"SELECT count(*) AS n FROM t WHERE x = ?","params":["a"]}`)
	b.ResetTimer()
	for b.Loop() {
		run := s.Open()
		if _, err := run.Do(context.Background(), "exec", req); err != nil {
			b.Fatal(err)
		}
		if err := run.End(context.Background(), true); err != nil {
			b.Fatal(err)
		}
	}
}

// The first keyword of a PostgreSQL statement, past blanks, comments
// (nested block comments included) and parentheses.
func TestPgLeadingKeyword(t *testing.T) {
	for in, want := range map[string]string{
		"commit":                          "COMMIT",
		"  \n\tBegin;":                    "BEGIN",
		"-- a\n-- b\nset role x":          "SET",
		"/* a /* b */ still */ COPY t":    "COPY",
		"/* a /* b */ COMMIT */ SELECT 1": "SELECT",
		"((select 1))":                    "SELECT",
		"start transaction":               "START",
		"-- only a comment":               "",
		"/* unterminated COMMIT":          "",
		`"commit"`:                        "",
		"":                                "",
	} {
		if got := pgLeadingKeyword(in); got != want {
			t.Errorf("pgLeadingKeyword(%q) = %q, want %q", in, got, want)
		}
	}
}
