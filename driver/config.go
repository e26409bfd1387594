package driver

import (
	"cmp"
	"database/sql"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentos-run/agentos/config"
	"github.com/agentos-run/agentos/internal/lazyre"
)

// FetchConfig is the "fetch" section of agentos.json: which URL prefixes
// the fetch device (tgp.fetch) may reach. The zero value refuses every
// fetch, with a 10 s timeout and a 4 MiB body cap.
type FetchConfig struct {
	// Allow lists the URL prefixes tools may fetch, e.g.
	// "https://api.example.com/v1/". Default: none (every fetch refused).
	Allow []string `json:"allow,omitempty"`
	// Timeout bounds one request. Default 10s.
	Timeout config.Duration `json:"timeout,omitzero"`
	// MaxBytes caps a response body. Default 4 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (c FetchConfig) Validate() error {
	for _, p := range c.Allow {
		if err := checkPrefix(p); err != nil {
			return fmt.Errorf("fetch.allow %v", err)
		}
	}
	return nil
}

// Device returns the fetch device the section stands for, adding the
// secrets (see Secrets.Bind).
func (c FetchConfig) Device(secrets map[string]Secret) Fetch {
	return Fetch{Allow: c.Allow, Timeout: time.Duration(c.Timeout), MaxBytes: c.MaxBytes, Secrets: secrets}
}

// SecretConfig is one named credential (a "binding") in agentos.json's
// "secrets": the fetch device adds it to a request that names it
// (tgp.fetch(url, {auth: "github"})), so that a tool never sees the value
// and the journal records only the name. For example:
//
//	"secrets": {
//	  "github": {"env": "GITHUB_TOKEN", "header": "Authorization", "format": "Bearer {}",
//	             "allow": ["https://api.github.com/"]},
//	  "maps":   {"env": "MAPS_KEY", "query": "key", "allow": ["https://maps.example.com/api/"]}
//	}
//
// IMPORTANT: the value comes from the environment variable Env, read once
// at start (Secrets.Bind), never from the file. An unset variable is not
// an error at start (a replay needs no credential): a fetch naming the
// secret then fails, saying which variable to set.
type SecretConfig struct {
	// Env names the environment variable holding the value. Required.
	Env string `json:"env"`
	// Header is the request header that carries it ("Authorization",
	// "X-Api-Key"); Query a query parameter instead ("api_key"). Exactly
	// one MUST be set.
	Header string `json:"header,omitempty"`
	Query  string `json:"query,omitempty"`
	// Format renders the value; "{}" stands for it ("Bearer {}", "token
	// {}"). Default "{}".
	Format string `json:"format,omitempty"`
	// Allow lists the URL prefixes the secret may be sent to, under the
	// same rules as fetch.allow (a request MUST pass both). Required: a
	// secret never goes anywhere by default. Plain http:// is accepted only
	// for loopback hosts.
	Allow []string `json:"allow"`
}

// Secrets is the "secrets" section of agentos.json: the fetch device's
// named credentials, by name. The zero value: none.
type Secrets map[string]SecretConfig

var (
	secretName = lazyre.New(`^[A-Za-z0-9_.-]{1,64}$`)
	tokenChars = lazyre.New("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") // an HTTP header name
)

// Validate checks every secret, in name order, naming the key that is
// wrong.
func (ss Secrets) Validate() error {
	names := make([]string, 0, len(ss))
	for n := range ss {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !secretName().MatchString(n) {
			return fmt.Errorf("secrets: the name %q must be 1 to 64 letters, digits, '_', '-' or '.'", n)
		}
		if err := ss[n].validate("secrets." + n); err != nil {
			return err
		}
	}
	return nil
}

// validate checks the secret written at key.
func (s SecretConfig) validate(key string) error {
	switch {
	case s.Env == "":
		return fmt.Errorf("%s.env is required: name the environment variable that holds the value (the value itself never goes in this file)", key)
	case !config.EnvName(s.Env):
		return fmt.Errorf("%s.env %q is not an environment variable name", key, s.Env)
	case (s.Header == "") == (s.Query == ""):
		return fmt.Errorf("%s: set exactly one of header (e.g. \"Authorization\") and query (e.g. \"api_key\")", key)
	case s.Header != "" && !tokenChars().MatchString(s.Header):
		return fmt.Errorf("%s.header %q is not an HTTP header name", key, s.Header)
	case s.Format != "" && !strings.Contains(s.Format, "{}"):
		return fmt.Errorf("%s.format %q must contain {} where the value goes, e.g. \"Bearer {}\"", key, s.Format)
	case strings.ContainsAny(s.Format, "\r\n"):
		return fmt.Errorf("%s.format must be one line", key)
	case len(s.Allow) == 0:
		return fmt.Errorf("%s.allow is required: list the URL prefixes the secret may be sent to, e.g. [\"https://api.example.com/\"]", key)
	}
	for _, p := range s.Allow {
		if err := checkPrefix(p); err != nil {
			return fmt.Errorf("%s.allow: %v", key, err)
		}
		u, _ := url.Parse(p)
		if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			return fmt.Errorf("%s.allow %q: a secret goes only over https (plain http is accepted for loopback hosts only)", key, p)
		}
	}
	return nil
}

// Bind returns the fetch device's secrets, their values read now from the
// environment (getenv; nil: os.Getenv); nil when there are none.
func (ss Secrets) Bind(getenv func(string) string) map[string]Secret {
	if len(ss) == 0 {
		return nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	out := make(map[string]Secret, len(ss))
	for n, s := range ss {
		out[n] = Secret{Header: s.Header, Query: s.Query, Format: s.Format, Allow: s.Allow, Env: s.Env, Value: getenv(s.Env)}
	}
	return out
}

// checkPrefix refuses an allow-list prefix that is not an http(s) URL with
// a host, or that is not written in canonical form (its meaning would
// depend on how a server reads it).
func checkPrefix(p string) error {
	u, err := url.Parse(p)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an http(s) URL prefix with a host, e.g. \"https://api.example.com/\"", p)
	}
	c, err := CanonicalURL(p)
	if err != nil {
		return fmt.Errorf("%q: %v", p, err)
	}
	if u.EscapedPath() != "" && c.EscapedPath() != u.EscapedPath() {
		return fmt.Errorf("%q is ambiguous: write it as %q", p, c.String())
	}
	return nil
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// DefaultSQLite is the embedded database's file when sql.sqlite is not
// set, relative to the tool root: under agentos' state directory, never
// visible to tools, never committed.
const DefaultSQLite = config.StateDir + "/data.db"

// SQLConfig is the "sql" section of agentos.json: the database
// tgp.exec_sql (the SQL session) reaches. The zero value: the SQLite file
// .agentos/data.db, at most 10,000 rows a statement.
type SQLConfig struct {
	// SQLite is the database file, relative to the tool root. Default
	// ".agentos/data.db" (DefaultSQLite).
	SQLite string `json:"sqlite,omitempty"`
	// PostgresDSNEnv names an environment variable holding a PostgreSQL
	// DSN (postgres://user:pass@host/db). When it is set and not empty,
	// exec_sql reaches that database through pgx instead of SQLite
	// (statements use $1, $2 placeholders). IMPORTANT: the DSN carries a
	// password, so it never goes in this file.
	PostgresDSNEnv string `json:"postgres_dsn_env,omitempty"`
	// Role (PostgreSQL only) is the role tool statements run as: every
	// run's transaction begins with SET LOCAL ROLE. It must exist, be
	// granted to the login role, and reach no server file. IMPORTANT: it
	// narrows well-behaved tools; the boundary against a hostile one is the
	// DSN's login role, which must itself have only the rights tools need
	// (a superuser login is warned about at start).
	Role string `json:"role,omitempty"`
	// MaxRows caps the rows one statement returns. Default 10,000.
	MaxRows int `json:"max_rows,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (c SQLConfig) Validate() error {
	if !config.InsideRoot(c.SQLite) {
		return fmt.Errorf("sql.sqlite %q must be a file inside the tool root, written relative to it (default %q)", c.SQLite, DefaultSQLite)
	}
	return nil
}

// SQLitePath returns the SQLite file of the tool root at root.
func (c SQLConfig) SQLitePath(root string) string {
	return filepath.Join(root, filepath.FromSlash(cmp.Or(c.SQLite, DefaultSQLite)))
}

// DatabaseOptions returns the options OpenDatabase opens the section's
// database with, for the tool root at root; log receives the warnings.
func (c SQLConfig) DatabaseOptions(root string, log *slog.Logger) DatabaseOptions {
	return DatabaseOptions{PostgresDSNEnv: c.PostgresDSNEnv, Role: c.Role, SQLite: c.SQLitePath(root), Logger: log}
}

// Session returns the SQL session over db the section stands for.
func (c SQLConfig) Session(db *sql.DB) *SQL {
	return &SQL{DB: db, MaxRows: c.MaxRows, Role: c.Role}
}
