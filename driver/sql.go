package driver

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// SQLDriver is the name of the database device.
const SQLDriver = "sql"

// RunDevice is a device with state for one tool run: a SQL transaction.
// The executor opens one per run (Session.Open) and ends it with the run's
// outcome.
type RunDevice interface {
	Device
	// End finishes the run's state: success commits, failure rolls back.
	// IMPORTANT: End MUST be safe to call when Do never was.
	End(ctx context.Context, success bool) error
}

// Session opens a RunDevice per run.
type Session interface {
	Open() RunDevice
}

// SQL is the database device behind tgp.exec_sql(sql, params) (executor's
// SQLBinding) and the kernel tool exec_sql. Each run gets one transaction,
// begun at its first statement: committed when the run succeeds, rolled
// back when it throws or hits a limit, so a failing tool leaves the
// database as it found it. Parameters are always bound, never interpolated:
// an array for ? (SQLite) or $1 (both) placeholders, or, on SQLite, an
// object for :name, @name and $name placeholders.
//
// Operation "exec", request {sql, params?}. A statement that returns rows
// answers {columns, rows} with rows as objects; any other answers
// {rows_affected}.
//
// A tool reaches the configured database and nothing else. IMPORTANT, for
// every statement, from a tool or from the kernel tool:
//   - it MUST be exactly one statement: "SELECT 1; DROP TABLE t" is refused
//     before anything runs (trailing semicolons and comments are fine);
//   - transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE ...)
//     is refused: the run's transaction is the device's;
//   - SQLite: ATTACH, DETACH and VACUUM (INTO), PRAGMAs other than the
//     read-only schema ones, load_extension, temporary objects, virtual
//     tables other than fts5/rtree/geopoly, and the raw-page tables are
//     refused by SQLite's authorizer, installed on every connection;
//     SQLITE_LIMIT_ATTACHED is 0;
//   - PostgreSQL: statements go through the extended protocol only (one
//     command per Parse); COPY, SET/RESET, DO, LOAD, LISTEN are refused;
//     what the statement may touch is what the login role (and Role) may.
//
// Refusals carry code "security" and say what to do instead.
type SQL struct {
	// DB is the database: a SQLite pool (modernc.org/sqlite, best opened
	// with OpenSQLite) or a PostgreSQL one (pgx stdlib). Its connections
	// are given the tool policy when a run uses them.
	DB *sql.DB
	// MaxRows caps the rows one statement returns (0: 10,000).
	MaxRows int
	// Role, on PostgreSQL, is the role tool statements run as: each run's
	// transaction begins with SET LOCAL ROLE Role. IMPORTANT: it narrows
	// what well-behaved tools do; it is not a boundary against a hostile
	// statement, which can return to the login role. The login role of
	// the DSN is the boundary (see PostgresCheck).
	Role string
}

// Open starts a run's session; its transaction begins on first use.
func (s *SQL) Open() RunDevice { return &sqlRun{s: s} }

// SQLRequest is the request of an exec call: {"sql": ..., "params": [...]}
// or {"sql": ..., "params": {"name": ...}}.
type SQLRequest struct {
	SQL string
	// Params are the values of positional placeholders (? or $1).
	Params []any
	// Named are the values of named placeholders (:name, @name, $name; the
	// keys carry no prefix). SQLite only. At most one of Params and Named
	// is set.
	Named map[string]any
}

// UnmarshalJSON reads {sql, params} where params is an array or an object,
// refusing any other key. Integral numbers become int64.
func (q *SQLRequest) UnmarshalJSON(b []byte) error {
	var raw struct {
		SQL    string          `json:"sql"`
		Params json.RawMessage `json:"params"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	*q = SQLRequest{SQL: raw.SQL}
	p := bytes.TrimSpace(raw.Params)
	var err error
	switch {
	case len(p) == 0 || string(p) == "null":
	case p[0] == '[':
		if err := json.Unmarshal(p, &q.Params); err != nil {
			return err
		}
		for i, v := range q.Params {
			if q.Params[i], err = sqlValue(v, fmt.Sprintf("params[%d]", i)); err != nil {
				return err
			}
		}
	case p[0] == '{':
		if err := json.Unmarshal(p, &q.Named); err != nil {
			return err
		}
		for k, v := range q.Named {
			if q.Named[k], err = sqlValue(v, "params."+k); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("params must be an array (values for ? or $1 placeholders, in order) or an object (values for :name placeholders), not %s", p)
	}
	return nil
}

// MarshalJSON writes the request back in the form UnmarshalJSON reads.
func (q SQLRequest) MarshalJSON() ([]byte, error) {
	var params any
	switch {
	case q.Named != nil:
		params = q.Named
	case q.Params != nil:
		params = q.Params
	}
	return json.Marshal(struct {
		SQL    string `json:"sql"`
		Params any    `json:"params,omitempty"`
	}{q.SQL, params})
}

var errNotScalar = fmt.Errorf("a parameter must be a string, a number, a boolean or null (pass JSON.stringify(value) to store an object or an array)")

// sqlValue checks one JSON parameter value and turns integral numbers into
// int64, so that 3 binds as INTEGER, not REAL.
func sqlValue(v any, name string) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
		return x, nil
	}
	return nil, fmt.Errorf("%s: %w", name, errNotScalar)
}

// MaxSQLAnswer bounds one exec_sql answer (64 MiB, the worker protocol's
// frame): the rows a statement returns, and on SQLite any one string or
// blob (SQLITE_LIMIT_LENGTH). A larger answer is an error that says so, and
// the host never holds more.
const MaxSQLAnswer = 64 << 20

// SQLResult is its answer.
type SQLResult struct {
	Columns      []string         `json:"columns,omitempty"`
	Rows         []map[string]any `json:"rows,omitempty"`
	RowsAffected *int64           `json:"rows_affected,omitempty"`
}

type sqlRun struct {
	s     *SQL
	mu    sync.Mutex // a tool may have several statements in flight
	conn  *sql.Conn
	tx    *sql.Tx
	guard *sqliteGuard // SQLite only
}

func (r *sqlRun) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	if op != "exec" {
		return nil, Errorf(CodeUnsupported, "sql has no operation %q (use tgp.exec_sql(sql, params))", op)
	}
	var q SQLRequest
	if len(req) == 0 {
		req = json.RawMessage("{}")
	}
	if err := json.Unmarshal(req, &q); err != nil {
		return nil, Errorf(CodeInvalid, "exec_sql: bad arguments: %v (call tgp.exec_sql(sql, params) with params an array or an object)", err)
	}
	res, err := r.exec(ctx, q)
	if err != nil {
		e := AsError(err)
		return nil, &Error{Code: e.Code, Message: "exec_sql: " + e.Message}
	}
	return encode(res)
}

// exec runs one statement in the run's transaction. Its errors name no
// caller: Do (for tools) and the kernel tool (for Exec) add "exec_sql: ".
func (r *sqlRun) exec(ctx context.Context, q SQLRequest) (SQLResult, error) {
	if strings.TrimSpace(q.SQL) == "" {
		return SQLResult{}, Errorf(CodeInvalid, "the statement is empty")
	}
	if strings.IndexByte(q.SQL, 0) >= 0 {
		return SQLResult{}, Errorf(CodeInvalid, "the statement contains a NUL byte")
	}
	pg := isPostgres(r.s.DB)
	var stmt string
	var args []any
	if !pg {
		var err error
		if stmt, args, err = sqliteStatement(q); err != nil {
			return SQLResult{}, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tx == nil {
		if err := r.begin(); err != nil {
			return SQLResult{}, Errorf(CodeUnavailable, "cannot open a transaction: %v", err)
		}
	}
	if pg {
		return r.s.pgExec(ctx, r.conn, q)
	}
	r.guard.reason() // forget an earlier refusal
	res, err := r.s.run(ctx, r.tx, stmt, args)
	if reason := r.guard.reason(); reason != "" {
		return SQLResult{}, Errorf(CodeSecurity, "%s", reason)
	}
	if err != nil && strings.Contains(err.Error(), "cannot VACUUM from within a transaction") {
		// SQLite refuses it first (a run is always in a transaction); the
		// authorizer would refuse its ATTACH anyway. Say it plainly.
		return SQLResult{}, Errorf(CodeSecurity, "VACUUM is not allowed: VACUUM INTO would copy the database out, and the run's transaction is the device's; tools reach only the configured database")
	}
	return res, err
}

// begin takes a connection for the run and opens its transaction there.
// The transaction outlives the call's context: End decides.
func (r *sqlRun) begin() error {
	ctx := context.Background()
	conn, err := r.s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	if isPostgres(r.s.DB) {
		tx, err := r.s.pgBegin(conn)
		if err != nil {
			conn.Close()
			return err
		}
		r.conn, r.tx = conn, tx
		return nil
	}
	g := new(sqliteGuard)
	if err := installGuard(conn, g); err != nil {
		conn.Close()
		return err
	}
	var tx *sql.Tx
	if err := g.allowTransaction(func() (err error) { tx, err = conn.BeginTx(ctx, nil); return err }); err != nil {
		conn.Close()
		return err
	}
	r.conn, r.tx, r.guard = conn, tx, g
	return nil
}

func (r *sqlRun) End(_ context.Context, success bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tx == nil {
		return nil
	}
	tx, conn, g := r.tx, r.conn, r.guard
	r.tx, r.conn, r.guard = nil, nil, nil
	defer conn.Close()
	end := tx.Rollback
	if success {
		end = tx.Commit
	}
	if g != nil {
		err := g.allowTransaction(end)
		if reason := g.reason(); err != nil && reason != "" {
			err = fmt.Errorf("%w (%s)", err, reason)
		}
		return endErr(success, err)
	}
	return endErr(success, end())
}

func endErr(success bool, err error) error {
	switch {
	case err == nil:
		return nil
	case success:
		return fmt.Errorf("committing the run's SQL transaction: %w", err)
	}
	return fmt.Errorf("rolling back the run's SQL transaction: %w", err)
}

// Exec runs one statement in its own transaction (the kernel tool
// exec_sql): committed when it succeeds. Its errors do not name exec_sql:
// the kernel tool does.
func (s *SQL) Exec(ctx context.Context, q SQLRequest) (SQLResult, error) {
	r := &sqlRun{s: s}
	res, err := r.exec(ctx, q)
	if endErr := r.End(ctx, err == nil); err == nil && endErr != nil {
		return SQLResult{}, Errorf(CodeIO, "%v", endErr)
	}
	return res, err
}

func (s *SQL) maxRows() int {
	if s.MaxRows <= 0 {
		return 10000
	}
	return s.MaxRows
}

func errTooManyRows(max int) *Error {
	return Errorf(CodeIO, "the statement returns more than %d rows; add a LIMIT or aggregate", max)
}

func errTooBig() *Error {
	return Errorf(CodeIO, "the statement returns more than 64 MiB; select fewer rows or columns, or add a LIMIT")
}

func errMultipleStatements() *Error {
	return Errorf(CodeSecurity, "one statement per call: split the text into one call per statement (they share the run's transaction)")
}

// returnsRows tells a query from a statement by its first keyword.
func returnsRows(stmt string) bool {
	s := strings.ToUpper(strings.TrimLeft(stmt, " \t\r\n("))
	for _, kw := range []string{"SELECT", "WITH", "VALUES", "PRAGMA", "EXPLAIN", "SHOW"} {
		if strings.HasPrefix(s, kw) {
			return true
		}
	}
	return strings.Contains(s, "RETURNING")
}

// sqliteStatement checks a request for SQLite: exactly one statement (the
// text SQLite will be given) and its arguments, named ones all used.
func sqliteStatement(q SQLRequest) (string, []any, error) {
	stmt, more := splitStatement(q.SQL)
	if more {
		return "", nil, errMultipleStatements()
	}
	if stmt == "" {
		return "", nil, Errorf(CodeInvalid, "the statement is empty (only comments or semicolons)")
	}
	args := q.Params
	if q.Named != nil {
		names := sqliteParamNames(stmt)
		var unused []string
		for k, v := range q.Named {
			if !names[k] {
				unused = append(unused, k)
			}
			args = append(args, sql.Named(k, v))
		}
		if len(unused) > 0 {
			sort.Strings(unused)
			return "", nil, Errorf(CodeInvalid, "params names %s, which the statement does not use (write :name, @name or $name in the statement)", strings.Join(unused, ", "))
		}
	}
	return stmt, args, nil
}

func (s *SQL) run(ctx context.Context, tx *sql.Tx, stmt string, args []any) (SQLResult, error) {
	if !returnsRows(stmt) {
		res, err := tx.ExecContext(ctx, stmt, args...)
		if err != nil {
			return SQLResult{}, Errorf(CodeInvalid, "%v", err)
		}
		n, _ := res.RowsAffected()
		return SQLResult{RowsAffected: &n}, nil
	}
	rows, err := tx.QueryContext(ctx, stmt, args...)
	if err != nil {
		return SQLResult{}, Errorf(CodeInvalid, "%v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return SQLResult{}, Errorf(CodeIO, "%v", err)
	}
	max := s.maxRows()
	out := SQLResult{Columns: cols, Rows: []map[string]any{}}
	size := 0
	for rows.Next() {
		if len(out.Rows) == max {
			return SQLResult{}, errTooManyRows(max)
		}
		row, n, err := scanRow(rows, cols)
		if err != nil {
			return SQLResult{}, Errorf(CodeIO, "%v", err)
		}
		size += n
		if size > MaxSQLAnswer {
			return SQLResult{}, errTooBig()
		}
		out.Rows = append(out.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return SQLResult{}, Errorf(CodeInvalid, "%v", err)
	}
	return out, nil
}

// scanRow reads the current row of rows (columns cols) as JSON values,
// and its size as the answer's limit counts it.
func scanRow(rows *sql.Rows, cols []string) (map[string]any, int, error) {
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, 0, err
	}
	row := make(map[string]any, len(cols))
	size := 0
	for i, c := range cols {
		size += len(c) + 8
		switch v := vals[i].(type) {
		case []byte:
			row[c] = string(v)
			size += len(v)
		case string:
			row[c] = v
			size += len(v)
		case time.Time:
			row[c] = v.UTC().Format(time.RFC3339Nano)
		default:
			row[c] = v
		}
	}
	return row, size, nil
}
