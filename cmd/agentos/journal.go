package main

import (
	"flag"
	"os"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// openJournal opens the journal at path or, when path is empty, the tool
// root's: the PostgreSQL database journal_postgres_dsn_env names, else the
// file of the journal key of agentos.json (default .agentos/journal.db).
// With mustExist, a missing journal file is a usage error rather than a new
// empty file.
//
// The journal scrubs the secrets cfg points at and seals reads of its
// secret_paths, as a runtime's does (see agentos.Config.OpenJournal).
func openJournal(absRoot string, cfg host.Config, path string, mustExist bool) (*journal.Journal, error) {
	if path == "" && cfg.JournalPostgresDSNEnv != "" {
		return cfg.OpenJournal(absRoot, "") // the PostgreSQL journal (journal_postgres_dsn_env)
	}
	if path == "" {
		path = cfg.JournalPath(absRoot) // where a runtime (serve, call) records
	}
	if _, err := os.Stat(path); err != nil && mustExist {
		return nil, usagef("no journal at %s: run a tool with 'agentos exec' first, or pass --journal PATH", path)
	}
	return cfg.OpenJournal(absRoot, path)
}

// openJournalToRead opens the journal as openJournal does (it MUST exist),
// for reading only: the embedded file read-only (beside other readers,
// without the free-page pass an open for writing makes over the whole
// file, see journal.Options.ReadOnly). The secrets of cfg are not
// registered: what is stored was redacted when written.
func openJournalToRead(absRoot string, cfg host.Config, path string) (*journal.Journal, error) {
	if path == "" && cfg.JournalPostgresDSNEnv != "" {
		return cfg.OpenJournal(absRoot, "")
	}
	if path == "" {
		path = cfg.JournalPath(absRoot)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, usagef("no journal at %s: run a tool with 'agentos exec' first, or pass --journal PATH", path)
	}
	opts := cfg.JournalOptions(absRoot)
	opts.ReadOnly = true
	return journal.Open(path, opts)
}

// journalCmd is the shared shape of the commands that read the journal
// (runs, trace, replay, recover): --root, --journal, --json, a fixed number
// of positional arguments, an existing journal.
type journalCmd struct {
	fs     *flag.FlagSet
	root   *string
	jpath  *string
	asJSON *bool
}

func newJournalCmd(name, jsonHelp string) *journalCmd {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return &journalCmd{
		fs:     fs,
		root:   fs.String("root", ".", rootUsage),
		jpath:  fs.String("journal", "", "the journal file (default: <root>/.agentos/journal.db)"),
		asJSON: fs.Bool("json", false, jsonHelp),
	}
}

// open parses args (wantArgs positional ones, described by what) and opens
// the tool root and its journal; the caller MUST close the journal.
func (c *journalCmd) open(args []string, wantArgs int, what string) (pos []string, absRoot string, cfg host.Config, j *journal.Journal, err error) {
	if pos, absRoot, cfg, err = c.parse(args, wantArgs, what); err != nil {
		return nil, "", cfg, nil, err
	}
	j, err = openJournal(absRoot, cfg, *c.jpath, true)
	return pos, absRoot, cfg, j, err
}
