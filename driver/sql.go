package driver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
// database as it found it. Parameters are always bound (? or $1 in the
// statement), never interpolated.
//
// Operation "exec", request {sql, params?}. A statement that returns rows
// (SELECT, WITH, VALUES, PRAGMA, or any with RETURNING) answers
// {columns, rows} with rows as objects; any other answers {rows_affected}.
type SQL struct {
	DB *sql.DB
	// MaxRows caps the rows one statement returns (0: 10,000).
	MaxRows int
}

// Open starts a run's session; its transaction begins on first use.
func (s *SQL) Open() RunDevice { return &sqlRun{s: s} }

// SQLRequest is the request of an exec call.
type SQLRequest struct {
	SQL    string `json:"sql"`
	Params []any  `json:"params,omitempty"`
}

// SQLResult is its answer.
type SQLResult struct {
	Columns      []string         `json:"columns,omitempty"`
	Rows         []map[string]any `json:"rows,omitempty"`
	RowsAffected *int64           `json:"rows_affected,omitempty"`
}

type sqlRun struct {
	s  *SQL
	mu sync.Mutex // a tool may have several statements in flight
	tx *sql.Tx
}

func (r *sqlRun) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	if op != "exec" {
		return nil, Errorf(CodeUnsupported, "sql has no operation %q (use tgp.exec_sql(sql, params))", op)
	}
	var q SQLRequest
	if err := decode(op, req, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.SQL) == "" {
		return nil, Errorf(CodeInvalid, "exec_sql: the statement is empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tx == nil {
		// The transaction outlives this call's context: End decides.
		tx, err := r.s.DB.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			return nil, Errorf(CodeUnavailable, "exec_sql: cannot open a transaction: %v", err)
		}
		r.tx = tx
	}
	res, err := r.s.exec(ctx, r.tx, q)
	if err != nil {
		return nil, err
	}
	return encode(res)
}

func (r *sqlRun) End(_ context.Context, success bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tx == nil {
		return nil
	}
	tx := r.tx
	r.tx = nil
	if success {
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("committing the run's SQL transaction: %w", err)
		}
		return nil
	}
	if err := tx.Rollback(); err != nil {
		return fmt.Errorf("rolling back the run's SQL transaction: %w", err)
	}
	return nil
}

// Exec runs one statement in its own transaction (the kernel tool
// exec_sql): committed when it succeeds.
func (s *SQL) Exec(ctx context.Context, q SQLRequest) (SQLResult, error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return SQLResult{}, Errorf(CodeUnavailable, "exec_sql: cannot open a transaction: %v", err)
	}
	res, err := s.exec(ctx, tx, q)
	if err != nil {
		_ = tx.Rollback()
		return SQLResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return SQLResult{}, Errorf(CodeIO, "exec_sql: commit: %v", err)
	}
	return res, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
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

func (s *SQL) exec(ctx context.Context, q querier, r SQLRequest) (SQLResult, error) {
	if !returnsRows(r.SQL) {
		res, err := q.ExecContext(ctx, r.SQL, r.Params...)
		if err != nil {
			return SQLResult{}, Errorf(CodeInvalid, "exec_sql: %v", err)
		}
		n, _ := res.RowsAffected()
		return SQLResult{RowsAffected: &n}, nil
	}
	rows, err := q.QueryContext(ctx, r.SQL, r.Params...)
	if err != nil {
		return SQLResult{}, Errorf(CodeInvalid, "exec_sql: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return SQLResult{}, Errorf(CodeIO, "exec_sql: %v", err)
	}
	max := s.MaxRows
	if max <= 0 {
		max = 10000
	}
	out := SQLResult{Columns: cols, Rows: []map[string]any{}}
	for rows.Next() {
		if len(out.Rows) == max {
			return SQLResult{}, Errorf(CodeIO, "exec_sql: the statement returns more than %d rows; add a LIMIT or aggregate", max)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return SQLResult{}, Errorf(CodeIO, "exec_sql: %v", err)
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			switch v := vals[i].(type) {
			case []byte:
				row[c] = string(v)
			case time.Time:
				row[c] = v.UTC().Format(time.RFC3339Nano)
			default:
				row[c] = v
			}
		}
		out.Rows = append(out.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return SQLResult{}, Errorf(CodeInvalid, "exec_sql: %v", err)
	}
	return out, nil
}
