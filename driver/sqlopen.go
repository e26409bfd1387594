package driver

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DatabaseOptions say which database exec_sql reaches: the settings of a
// tool root's sql section (agentos.json), resolved.
type DatabaseOptions struct {
	// PostgresDSNEnv names an environment variable holding a PostgreSQL
	// DSN (sql.postgres_dsn_env). Empty: SQLite.
	PostgresDSNEnv string
	// Role (PostgreSQL only, sql.role) is the role tool statements run as;
	// it is checked at open (see PostgresCheck).
	Role string
	// SQLite is the embedded database's file, used when PostgresDSNEnv is
	// empty.
	SQLite string
	// Logger receives the warnings about a PostgreSQL login role (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// OpenDatabase opens the database exec_sql reaches: PostgreSQL when
// opts.PostgresDSNEnv names a set variable (pinged, and its login role and
// Role checked by PostgresCheck: a login role that can reach the server's
// files is logged as a warning, an unusable Role is an error), else the
// embedded SQLite file opts.SQLite (created private, mode 0600, when
// missing; see OpenSQLite).
//
// IMPORTANT: an error never carries the DSN or its password: it names the
// variable, not its value. A set PostgresDSNEnv whose variable is empty is
// an error, never a silent fall back to SQLite.
func OpenDatabase(opts DatabaseOptions) (*sql.DB, error) {
	if opts.PostgresDSNEnv != "" {
		return openPostgres(opts)
	}
	if opts.Role != "" {
		return nil, fmt.Errorf("agentos: sql.role applies to PostgreSQL only (set sql.postgres_dsn_env), or remove it")
	}
	if err := createPrivate(opts.SQLite); err != nil {
		return nil, fmt.Errorf("agentos: creating the database %s: %w", opts.SQLite, err)
	}
	db, err := OpenSQLite(opts.SQLite)
	if err != nil {
		return nil, fmt.Errorf("agentos: %w", err)
	}
	return db, nil
}

// openPostgres opens the PostgreSQL database whose DSN is in the
// variable opts.PostgresDSNEnv, checks it answers and that its roles may
// be used (see PostgresCheck), logging the warnings.
func openPostgres(opts DatabaseOptions) (*sql.DB, error) {
	log := cmp.Or(opts.Logger, slog.Default())
	env := opts.PostgresDSNEnv
	dsn := os.Getenv(env)
	if dsn == "" {
		return nil, fmt.Errorf("agentos: sql.postgres_dsn_env names %s, which is not set: export the PostgreSQL DSN in it, or remove the setting to use SQLite", env)
	}
	db, err := sql.Open("pgx", dsn)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err != nil {
			db.Close()
		}
	}
	if err != nil {
		// pgx errors can quote the DSN; name the variable, not its value.
		return nil, fmt.Errorf("agentos: cannot reach the PostgreSQL database in %s: %s", env, redactDSN(err.Error(), dsn))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	warnings, err := PostgresCheck(ctx, db, opts.Role)
	cancel()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("agentos: the PostgreSQL database in %s: %s", env, redactDSN(err.Error(), dsn))
	}
	for _, w := range warnings {
		log.Warn("agentos: "+w, slog.String("dsn_env", env))
	}
	return db, nil
}

// redactDSN removes the DSN and its password from an error text.
func redactDSN(msg, dsn string) string {
	msg = strings.ReplaceAll(msg, dsn, "[dsn]")
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "[redacted]")
		}
	}
	return msg
}

// createPrivate creates the file at p, when missing, with mode 0600 (and
// its directory 0700), so that a database that creates its files with the
// umask's mode finds it private already (SQLite gives its -wal and -shm
// files the mode of the database file).
func createPrivate(p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
