package driver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The SQLite side of exec_sql: what a tool's statement may do is decided by
// SQLite's authorizer (sqlite3_set_authorizer), which SQLite consults for
// every action while it compiles a statement (and again if it recompiles
// it), including the statements of triggers and views and the internal
// statements of VACUUM and of virtual-table modules. No statement text is
// matched: the policy sees what SQLite is about to do.

// sqliteAllowedPragmas are the PRAGMAs a tool may run: read-only schema
// information. Every other PRAGMA (writing ones, ones that touch files or
// the connection) is refused.
var sqliteAllowedPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true,
	"index_list": true, "index_info": true, "index_xinfo": true,
	"foreign_key_list": true, "foreign_key_check": true,
}

// sqliteReadOnlyPragmas may be read (never set) because SQLite's modules
// read them for a tool's statement: R*Tree reads page_size when it creates
// its table, FTS5 reads data_version on every query.
var sqliteReadOnlyPragmas = map[string]bool{"page_size": true, "data_version": true}

// sqliteAllowedModules are the virtual-table modules CREATE VIRTUAL TABLE
// may use: full-text search and spatial indexes, all stored in the database
// itself. dbstat and sqlite_dbpage expose the file's raw pages and are
// refused.
var sqliteAllowedModules = map[string]bool{"fts5": true, "fts5vocab": true, "rtree": true, "rtree_i32": true, "geopoly": true}

// sqliteRawTables expose the database file's raw pages (including freed
// pages that may still hold deleted rows).
var sqliteRawTables = map[string]bool{"sqlite_dbpage": true, "dbstat": true}

// sqliteGuard is the authorizer of one connection. It refuses what a tool
// must not do and remembers why, so the error can say it. Its zero value is
// the tool policy.
//
// IMPORTANT: the driver's own BEGIN, COMMIT and ROLLBACK are SQL too, and
// the authorizer sees them like a tool's: they MUST run inside
// allowTransaction, the only window in which transaction control passes.
type sqliteGuard struct {
	txWindow atomic.Bool
	denied   atomic.Pointer[string]
}

// allowTransaction runs f (the driver's BEGIN, COMMIT or ROLLBACK) with
// transaction control allowed.
func (g *sqliteGuard) allowTransaction(f func() error) error {
	g.txWindow.Store(true)
	defer g.txWindow.Store(false)
	return f()
}

// reason returns why the last statement was refused ("" when it was not)
// and forgets it.
func (g *sqliteGuard) reason() string {
	if p := g.denied.Swap(nil); p != nil {
		return *p
	}
	return ""
}

func (g *sqliteGuard) deny(format string, args ...any) sqlite.AuthorizerReturnCode {
	msg := fmt.Sprintf(format, args...)
	g.denied.CompareAndSwap(nil, &msg) // the first refusal is the one to report
	return sqlite.AuthorizerDeny
}

// authorize is the sqlite.AuthorizerFn. The arguments are SQLite's: for
// tables arg1 is the table, for PRAGMA the name and its argument, for
// functions arg2 is the function's name.
func (g *sqliteGuard) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete, sqlite.AuthRecursive,
		sqlite.AuthCreateTable, sqlite.AuthCreateIndex, sqlite.AuthCreateView, sqlite.AuthCreateTrigger,
		sqlite.AuthDropTable, sqlite.AuthDropIndex, sqlite.AuthDropView, sqlite.AuthDropTrigger,
		sqlite.AuthAlterTable, sqlite.AuthReindex, sqlite.AuthAnalyze, sqlite.AuthDropVTable:
		return sqlite.AuthorizerOK
	case sqlite.AuthRead:
		if sqliteRawTables[strings.ToLower(arg1)] {
			return g.deny("%s is not available to tools: it exposes the database file's raw pages; query the tables themselves", arg1)
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return g.deny("load_extension is not allowed: tools cannot load code into the database")
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		name := strings.ToLower(arg1)
		if sqliteAllowedPragmas[name] || sqliteReadOnlyPragmas[name] && arg2 == "" {
			return sqlite.AuthorizerOK
		}
		return g.deny("PRAGMA %s is not allowed: tools may only read the schema (PRAGMA %s, or SELECT * FROM pragma_table_info('t'))", arg1, strings.Join(sortedKeys(sqliteAllowedPragmas), ", "))
	case sqlite.AuthCreateVTable:
		if sqliteAllowedModules[strings.ToLower(arg2)] {
			return sqlite.AuthorizerOK
		}
		return g.deny("CREATE VIRTUAL TABLE ... USING %s is not allowed: tools may use %s", arg2, strings.Join(sortedKeys(sqliteAllowedModules), ", "))
	case sqlite.AuthTransaction, sqlite.AuthSavepoint:
		if action == sqlite.AuthTransaction && g.txWindow.Load() {
			return sqlite.AuthorizerOK
		}
		return g.deny("transaction control is not allowed (BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE): each run is one transaction, committed when the tool succeeds and rolled back when it throws; to undo the run's writes, throw")
	case sqlite.AuthAttach, sqlite.AuthDetach:
		return g.deny("ATTACH is not allowed: tools reach only the configured database (DETACH and VACUUM, which attaches a copy, are refused too)")
	case sqlite.AuthCreateTempTable, sqlite.AuthCreateTempIndex, sqlite.AuthCreateTempView, sqlite.AuthCreateTempTrigger,
		sqlite.AuthDropTempTable, sqlite.AuthDropTempIndex, sqlite.AuthDropTempView, sqlite.AuthDropTempTrigger:
		return g.deny("temporary tables, indexes, views and triggers are not allowed: they would outlive the run on a shared connection; use a CTE (WITH ...) or a regular table")
	}
	return g.deny("this statement is not allowed for tools (SQLite action %d)", action)
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// installGuard gives the physical connection behind conn the authorizer g
// and sets its limits: no attached database at all, no string or blob
// larger than an answer may be.
func installGuard(conn *sql.Conn, g *sqliteGuard) error {
	err := conn.Raw(func(dc any) error {
		reg, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("the SQLite driver (%T) has no authorizer", dc)
		}
		return reg.RegisterAuthorizer(g.authorize)
	})
	if err != nil {
		return err
	}
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_ATTACHED, 0); err != nil {
		return fmt.Errorf("setting SQLITE_LIMIT_ATTACHED: %w", err)
	}
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, MaxSQLAnswer); err != nil {
		return fmt.Errorf("setting SQLITE_LIMIT_LENGTH: %w", err)
	}
	return nil
}

// guardedConnector opens SQLite connections that refuse, from their first
// statement, what a tool must not do: every connection of the pool carries
// the tool policy, so a connection that escapes the per-run setup fails
// closed.
type guardedConnector struct{ sqldriver.Connector }

func (c guardedConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	reg, ok := dc.(sqlite.AuthorizerRegisterer)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("the SQLite driver (%T) has no authorizer", dc)
	}
	if err := reg.RegisterAuthorizer(new(sqliteGuard).authorize); err != nil {
		dc.Close()
		return nil, err
	}
	return dc, nil
}

// OpenSQLite opens the SQLite database exec_sql reaches at path (created
// with its directory when missing): WAL, so readers never wait; a busy
// timeout, so concurrent runs' transactions queue instead of failing;
// foreign keys on; SQLite's defensive mode (no writable schema, no writes to
// raw pages or shadow tables); and on every connection the tool policy of
// SQL (see its documentation).
//
// IMPORTANT: every connection of the returned pool runs under that policy,
// for any user of the pool: BEGIN, ATTACH, most PRAGMAs and temporary
// objects are refused on it. Open a separate *sql.DB for administration.
func OpenSQLite(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	base, err := sqlite.NewConnector("file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_defensive=1")
	if err != nil {
		return nil, fmt.Errorf("opening the database %s: %w", path, err)
	}
	// Runtimes starting together on one root may create the file at the
	// same time: switching a new database to WAL takes an exclusive lock,
	// and SQLite answers SQLITE_BUSY there without waiting for the busy
	// timeout. Such an open is tried again, for as long as that timeout.
	deadline := time.Now().Add(openBusyWait)
	for {
		db := sql.OpenDB(guardedConnector{base})
		err := db.Ping()
		if err == nil {
			return db, nil
		}
		db.Close()
		if !isBusy(err) || time.Now().After(deadline) {
			return nil, fmt.Errorf("opening the database %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openBusyWait bounds how long OpenSQLite retries a busy database: the
// busy timeout its connections wait for a lock.
const openBusyWait = 10 * time.Second

// isBusy reports whether err is SQLite's SQLITE_BUSY (primary code 5).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5
}
