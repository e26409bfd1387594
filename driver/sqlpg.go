package driver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL side of exec_sql. PostgreSQL has no authorizer, so the
// guarantees come from three places:
//
//   - One statement per call: every statement goes through the extended
//     protocol (Parse/Bind/Execute, pgx.QueryExecModeDescribeExec), whose
//     Parse the server refuses for more than one command. pgx's Exec would
//     use the simple protocol, which runs any number, whenever there are no
//     parameters (or when the DSN says default_query_exec_mode=simple_protocol);
//     it is never used for a tool's statement.
//   - No transaction or session control: statements whose first keyword
//     controls the transaction or the session are refused before they are
//     sent (BEGIN, COMMIT, SET ROLE, COPY, DO ...), and after every statement
//     the connection MUST still be inside the run's transaction, or the run
//     fails.
//   - The rights of the role: file and program access (COPY ... PROGRAM,
//     COPY ... TO 'file', pg_read_file, lo_import) need a superuser or the
//     pg_*_server_* roles. The login role of the DSN is the boundary; SQL.Role
//     narrows well-behaved tools further (SET LOCAL ROLE in each run) but a
//     hostile statement can return to the login role (set_config('role', ...)).

// pgRefused maps the first keyword of statements tools may not run to why.
var pgRefused = map[string]string{
	"BEGIN": pgTxMsg, "START": pgTxMsg, "COMMIT": pgTxMsg, "END": pgTxMsg, "ABORT": pgTxMsg,
	"ROLLBACK": pgTxMsg, "SAVEPOINT": pgTxMsg, "RELEASE": pgTxMsg,
	"PREPARE":    "PREPARE is not allowed: PREPARE TRANSACTION would end the run's transaction, and prepared statements are the driver's",
	"SET":        "SET and RESET are not allowed: session settings (the role above all) are the node's, not a tool's",
	"RESET":      "SET and RESET are not allowed: session settings (the role above all) are the node's, not a tool's",
	"DISCARD":    "DISCARD is not allowed: session state is the node's",
	"COPY":       "COPY is not allowed: tools reach no file and no program; use INSERT and SELECT",
	"DO":         "DO blocks are not allowed: run one statement per call",
	"LOAD":       "LOAD is not allowed: tools cannot load code into the server",
	"LISTEN":     "LISTEN and UNLISTEN are not allowed: they would outlive the run on a shared connection",
	"UNLISTEN":   "LISTEN and UNLISTEN are not allowed: they would outlive the run on a shared connection",
	"EXECUTE":    "EXECUTE and DEALLOCATE are not allowed: prepared statements are the driver's",
	"DEALLOCATE": "EXECUTE and DEALLOCATE are not allowed: prepared statements are the driver's",
	"CHECKPOINT": "CHECKPOINT is not allowed: it is the server administrator's",
}

const pgTxMsg = "transaction control is not allowed (BEGIN, START, COMMIT, END, ABORT, ROLLBACK, SAVEPOINT, RELEASE): each run is one transaction, committed when the tool succeeds and rolled back when it throws; to undo the run's writes, throw"

// isPostgres reports whether db is a pgx (jackc/pgx/v5/stdlib) pool.
func isPostgres(db *sql.DB) bool {
	_, ok := db.Driver().(*stdlib.Driver)
	return ok
}

// pgBegin opens the run's transaction on conn and, with a role, switches
// to it for the rest of the transaction.
func (s *SQL) pgBegin(conn *sql.Conn) (*sql.Tx, error) {
	ctx := context.Background() // the transaction outlives the call: End decides
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if s.Role != "" {
		if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE "+pgx.Identifier{s.Role}.Sanitize()); err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("switching to the tools' role %q (sql.role): %w", s.Role, err)
		}
	}
	return tx, nil
}

// pgExec runs one tool statement on conn, inside the run's transaction.
func (s *SQL) pgExec(ctx context.Context, conn *sql.Conn, q SQLRequest) (SQLResult, error) {
	if q.Named != nil {
		return SQLResult{}, Errorf(CodeInvalid, "PostgreSQL takes positional parameters only: write $1, $2 ... in the statement and pass params as an array")
	}
	if msg, ok := pgRefused[pgLeadingKeyword(q.SQL)]; ok {
		return SQLResult{}, Errorf(CodeSecurity, "%s", msg)
	}
	var out SQLResult
	stillInTx := true // until the connection says otherwise
	err := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("not a pgx connection: %T", dc)
		}
		pc := sc.Conn()
		defer func() { stillInTx = pc.PgConn().TxStatus() != 'I' }()
		return s.pgSavepointed(ctx, pc, q, &out)
	})
	if !stillInTx {
		// Only a statement refused above can end a transaction; this is the
		// tripwire should one ever get through.
		return SQLResult{}, Errorf(CodeSecurity, "the statement ended the run's transaction: %s", pgTxMsg)
	}
	if err != nil {
		return SQLResult{}, pgToolError(err)
	}
	return out, nil
}

// pgSavepointed runs the statement q (see pgStatement) inside a savepoint.
// A failed statement is undone alone, as on SQLite: without the savepoint
// PostgreSQL would refuse every later statement of the run, and a tool
// that caught the error could never succeed.
func (s *SQL) pgSavepointed(ctx context.Context, pc *pgx.Conn, q SQLRequest, out *SQLResult) error {
	keep := context.WithoutCancel(ctx)
	if _, err := pc.Exec(keep, "SAVEPOINT agentos_statement"); err != nil {
		return err
	}
	err := s.pgStatement(ctx, pc, q, out)
	if err != nil {
		if _, rerr := pc.Exec(keep, "ROLLBACK TO SAVEPOINT agentos_statement"); rerr != nil {
			return fmt.Errorf("%w (and undoing it failed: %v)", err, rerr)
		}
	}
	if _, rerr := pc.Exec(keep, "RELEASE SAVEPOINT agentos_statement"); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// pgToolError is the error a tool sees for a failed statement: the
// driver's own, the one-statement refusal, or the database's message.
func pgToolError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42601" && strings.Contains(pe.Message, "multiple commands") {
		return errMultipleStatements()
	}
	return Errorf(CodeInvalid, "%v", err)
}

// pgStatement runs one statement through the extended protocol
// (DescribeExec: Parse, which takes one command only, and Describe; then
// Bind and Execute) and fills out.
func (s *SQL) pgStatement(ctx context.Context, pc *pgx.Conn, q SQLRequest, out *SQLResult) error {
	rows, err := pc.Query(ctx, q.SQL, append([]any{pgx.QueryExecModeDescribeExec}, q.Params...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	if len(fields) > 0 {
		out.Columns = make([]string, len(fields))
		for i, f := range fields {
			out.Columns[i] = f.Name
		}
		out.Rows = []map[string]any{}
	}
	max := s.maxRows()
	size := 0
	for rows.Next() {
		if len(out.Rows) == max {
			return errTooManyRows(max)
		}
		for _, raw := range rows.RawValues() {
			size += len(raw) + 8
		}
		if size > MaxSQLAnswer {
			return errTooBig()
		}
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		row := make(map[string]any, len(fields))
		for i, f := range fields {
			row[f.Name] = pgJSONValue(vals[i], f.DataTypeOID)
		}
		out.Rows = append(out.Rows, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(fields) == 0 {
		n := rows.CommandTag().RowsAffected()
		out.RowsAffected = &n
	}
	return nil
}

// pgJSONValue turns a value pgx decoded into one JSON carries plainly.
func pgJSONValue(v any, oid uint32) any {
	switch x := v.(type) {
	case nil, bool, string, int16, int32, int64, float32, float64, map[string]any, []any:
		return x
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		return string(x)
	case [16]byte:
		if oid == pgtype.UUIDOID {
			return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
		}
		return fmt.Sprintf("%x", x[:])
	case json.Marshaler:
		if b, err := x.MarshalJSON(); err == nil && json.Valid(b) {
			return json.RawMessage(b)
		}
	case fmt.Stringer:
		return x.String()
	}
	if b, err := json.Marshal(v); err == nil {
		return json.RawMessage(b)
	}
	return fmt.Sprint(v)
}

// PostgresCheck inspects the login role of db (a pgx pool) and role (the
// configured sql.role, may be empty) before any tool runs. It returns an
// error when role cannot be used (missing, not granted to the login role,
// or itself able to reach server files), and warnings for a login role that
// can reach the server's files or programs: a tool could do the same.
//
// Deciding: a superuser login is a warning, not a refusal, because it is
// what many development databases hand out and refusing would stop them
// from starting; the warning says what it means and what to do. A
// configured sql.role that is a superuser is an error: it would defeat the
// one thing it is for.
func PostgresCheck(ctx context.Context, db *sql.DB, role string) (warnings []string, err error) {
	const q = `SELECT r.rolname, r.rolsuper, COALESCE((SELECT string_agg(f.rolname, ', ' ORDER BY f.rolname) FROM pg_roles f
		WHERE f.rolname IN ('pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program') AND pg_has_role(r.oid, f.oid, 'MEMBER')), '')
		FROM pg_roles r WHERE r.rolname = $1`
	powers := func(name string) (found, super bool, files string, err error) {
		err = db.QueryRowContext(ctx, q, name).Scan(&name, &super, &files)
		if errors.Is(err, sql.ErrNoRows) {
			return false, false, "", nil
		}
		return err == nil, super, files, err
	}
	var login string
	if err := db.QueryRowContext(ctx, "SELECT current_user").Scan(&login); err != nil {
		return nil, fmt.Errorf("reading the PostgreSQL login role: %w", err)
	}
	_, super, files, err := powers(login)
	if err != nil {
		return nil, fmt.Errorf("reading the rights of the PostgreSQL role %q: %w", login, err)
	}
	also := ""
	if role != "" {
		also = " (sql.role does not prevent it: a statement can return to the login role with set_config('role', ...))"
	}
	switch {
	case super:
		warnings = append(warnings, fmt.Sprintf("the PostgreSQL login role %q is a superuser: a tool's statements can read and write the server's files and run programs on it (COPY ... PROGRAM, pg_read_file)%s; log in as a role with only the rights tools need (see docs/SANDBOX.md)", login, also))
	case files != "":
		warnings = append(warnings, fmt.Sprintf("the PostgreSQL login role %q is a member of %s: a tool's statements can reach the server's files or programs%s; log in as a role with only the rights tools need (see docs/SANDBOX.md)", login, files, also))
	}
	if role == "" {
		return warnings, nil
	}
	found, rsuper, rfiles, err := powers(role)
	if err != nil {
		return warnings, fmt.Errorf("reading the rights of the PostgreSQL role %q (sql.role): %w", role, err)
	}
	if !found {
		return warnings, fmt.Errorf("sql.role names %q, which does not exist in this database: CREATE ROLE it with only the rights tools need, or remove the setting", role)
	}
	if rsuper || rfiles != "" {
		return warnings, fmt.Errorf("sql.role names %q, which can reach the server's files or programs (superuser or a pg_*_server_* role): the tools' role must have only the rights tools need", role)
	}
	var member bool
	if err := db.QueryRowContext(ctx, "SELECT pg_has_role(current_user, $1::text, 'MEMBER')", role).Scan(&member); err != nil {
		return warnings, fmt.Errorf("checking that %q may act as %q: %w", login, role, err)
	}
	if !member {
		return warnings, fmt.Errorf("sql.role names %q, but the login role %q may not act as it: GRANT %s TO %s", role, login, pgx.Identifier{role}.Sanitize(), pgx.Identifier{login}.Sanitize())
	}
	return warnings, nil
}
