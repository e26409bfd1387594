package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// validateSecretPaths checks secret_paths (the secrets section is the
// fetch driver's: driver.Secrets).
func (c Config) validateSecretPaths() error {
	for _, p := range c.SecretPaths {
		if _, err := vfs.Clean(strings.TrimSuffix(p, "/")); err != nil || p == "" || p == "." {
			return fmt.Errorf("secret_paths %q must be a file or directory inside the tool root, written relative to it", p)
		}
	}
	return nil
}

// SecretValues returns every secret value the configuration points at, read
// from the environment now: the secrets' values (raw and rendered), the
// model's API key, the Git token, the capability signing key (as written in
// its variable), the PostgreSQL DSN and its password. The
// journal scrubs each of them by value from everything it writes.
func (c Config) SecretValues() []string {
	out := driver.Fetch{Secrets: c.Secrets.Bind(nil)}.SecretValues()
	for _, env := range []string{orDefault(c.LLM.APIKeyEnv, llm.EnvAPIKey), c.Git.Token(), c.Capability.SigningKeyEnv} {
		if env == "" {
			continue
		}
		if v := os.Getenv(env); v != "" {
			out = append(out, v)
		}
	}
	for _, env := range []string{c.SQL.PostgresDSNEnv, c.JournalPostgresDSNEnv} {
		if env == "" {
			continue
		}
		if dsn := os.Getenv(env); dsn != "" {
			out = append(out, dsn)
			if u, err := url.Parse(dsn); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					out = append(out, pw, u.User.String())
				}
			}
			// key=value DSNs: password=... (quoted or not)
			for _, f := range strings.Fields(dsn) {
				if k, v, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") && v != "" {
					out = append(out, strings.Trim(v, `'"`))
				}
			}
		}
	}
	return out
}

// JournalDSN returns the DSN of the PostgreSQL journal
// (journal_postgres_dsn_env), "" when the journal is the embedded file. A
// setting naming an unset variable is an error, never a silent fallback to
// the file: a node that recorded apart from its cluster could not be
// resumed by it.
func (c Config) JournalDSN() (string, error) {
	env := c.JournalPostgresDSNEnv
	if env == "" {
		return "", nil
	}
	dsn := os.Getenv(env)
	if dsn == "" {
		return "", fmt.Errorf("agentos: journal_postgres_dsn_env names %s, which is not set: export the journal's PostgreSQL DSN in it, or remove the setting to use the embedded journal file", env)
	}
	return dsn, nil
}

// JournalOptions returns the journal options of the tool root at root:
// every configured secret scrubbed by value, and the reads of files under
// secret_paths sealed (see journal.Options.Seal).
func (c Config) JournalOptions(root string) journal.Options {
	d, _ := journal.ParseDurability(c.JournalDurability) // validated at load
	opts := journal.Options{Secrets: c.SecretValues(), Lease: time.Duration(c.JournalLease), Durability: d, SyncRuns: c.JournalSyncRuns}
	if len(c.SecretPaths) > 0 {
		opts.Seal = c.secretRead(root)
	}
	return opts
}

// OpenJournal opens the journal at path (empty: the tool root's: the
// PostgreSQL journal when journal_postgres_dsn_env is set, else
// .agentos/journal.db) with JournalOptions, creating a file's directory
// 0700, and registers the content of the files under secret_paths as
// secrets, so that they are scrubbed wherever they appear (a model's prompt
// that quotes one included).
func (c Config) OpenJournal(root, path string) (*journal.Journal, error) {
	var j *journal.Journal
	dsn, err := c.JournalDSN()
	switch {
	case err != nil && path == "":
		return nil, err
	case dsn != "" && path == "":
		j, err = journal.OpenPostgres(dsn, c.JournalOptions(root))
	default:
		if path == "" {
			path = c.JournalPath(root)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("agentos: creating %s: %w", filepath.Dir(path), err)
		}
		j, err = journal.Open(path, c.JournalOptions(root))
	}
	if err != nil {
		return nil, err
	}
	c.registerSecretFiles(root, j)
	return j, nil
}

// maxSecretFile bounds a secret file whose content is registered at start.
const maxSecretFile = 1 << 20

// registerSecretFiles registers the content of the files under
// secret_paths with j (files larger than 1 MiB and more than 256 files are
// left to sealing alone).
func (c Config) registerSecretFiles(root string, j *journal.Journal) {
	n := 0
	for _, sp := range c.SecretPaths {
		base := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(sp, "/")))
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if n++; n > 256 {
				return filepath.SkipAll
			}
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSecretFile {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil {
				j.AddSecretContent(b)
			}
			return nil
		})
	}
}

// secretRead returns the predicate that seals an fs.read_file of a file
// under secret_paths: the path as the tool wrote it (/lib/... is the tools
// directory), and the file it resolves to, through links (symbolic or
// hard), are both compared.
func (c Config) secretRead(root string) func(driver.Call) bool {
	tools := c.Tools()
	var paths []string
	for _, p := range c.SecretPaths {
		if cl, err := vfs.Clean(strings.TrimSuffix(p, "/")); err == nil {
			paths = append(paths, cl)
		}
	}
	return func(call driver.Call) bool {
		if call.Driver != driver.FSDriver || call.Op != "read_file" {
			return false
		}
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(call.Request, &a) != nil {
			return false
		}
		rel := a.Path
		switch {
		case rel == vfs.LibMount || strings.HasPrefix(rel, vfs.LibMount+"/"):
			rel = path.Join(tools, strings.TrimPrefix(rel, vfs.LibMount))
		case strings.HasPrefix(rel, "/"):
			return false // /tmp is the run's own scratch
		}
		rel = path.Clean(rel)
		for _, sp := range paths {
			if rel == sp || strings.HasPrefix(rel, sp+"/") {
				return true
			}
		}
		return underSecret(root, rel, paths)
	}
}

// underSecret reports whether the file rel resolves to (after links) is,
// or is under, one of the secret paths, or is a hard link to a secret file.
func underSecret(root, rel string, paths []string) bool {
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return false
	}
	fi, err := os.Stat(real)
	if err != nil {
		return false
	}
	for _, sp := range paths {
		spReal, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(sp)))
		if err != nil {
			continue
		}
		if real == spReal || strings.HasPrefix(real, spReal+string(filepath.Separator)) {
			return true
		}
		if !mayBeHardLinked(fi) {
			continue
		}
		found := false
		_ = filepath.WalkDir(spReal, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if si, err := os.Stat(p); err == nil && os.SameFile(fi, si) {
					found = true
					return filepath.SkipAll
				}
			}
			return nil
		})
		if found {
			return true
		}
	}
	return false
}

// secureState makes agentos' state private to its user: the state
// directory (and the directories of a journal or database configured
// elsewhere, when agentos creates them) 0700, every file agentos keeps
// there 0600. State left over-permissive by an older version, or by a
// umask of 000, is tightened, and the change is logged once: how many
// paths, and the first of them.
func (c Config) secureState(root string, log *slog.Logger) error {
	state := filepath.Join(root, StateDir)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return fmt.Errorf("agentos: preparing %s: %w", state, err)
	}
	var t tightener
	_ = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // never chmod through a link
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		t.tighten(p, want)
		return nil
	})
	for _, f := range []string{c.JournalPath(root), c.SQLitePath(root)} {
		for _, p := range []string{f, f + "-wal", f + "-shm", f + "-journal"} {
			t.tighten(p, 0o600)
		}
	}
	t.report(log)
	return errors.Join(t.errs...)
}

// tightener removes the permission bits paths have beyond what they should
// have, and counts what it changed.
type tightener struct {
	changed  int
	first    string      // the first path changed
	was, now fs.FileMode // its permissions before and after
	errs     []error
}

// tighten removes the permission bits p has beyond want (a missing file is
// fine).
func (t *tightener) tighten(p string, want fs.FileMode) {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return
	}
	if fi.Mode().Perm()&^want == 0 {
		return
	}
	if err := os.Chmod(p, fi.Mode().Perm()&want); err != nil {
		t.errs = append(t.errs, fmt.Errorf("agentos: %s is readable by other users and cannot be made private: %w", p, err))
		return
	}
	if t.changed == 0 {
		t.first, t.was, t.now = p, fi.Mode().Perm(), fi.Mode().Perm()&want
	}
	t.changed++
}

// report logs what was tightened, once.
func (t *tightener) report(log *slog.Logger) {
	if t.changed == 0 {
		return
	}
	log.Warn("agentos: made state private to its user", slog.Int("paths", t.changed), slog.String("first", t.first), slog.String("was", t.was.String()), slog.String("now", t.now.String()))
}
