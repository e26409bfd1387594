package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/journal"
)

// openJournal opens the journal at path, or at the tool root's default
// (.agentos/journal.db) when path is empty. With mustExist, a missing
// journal is a usage error rather than a new empty file.
func openJournal(absRoot, path string, mustExist bool) (*journal.Journal, error) {
	if path == "" {
		path = filepath.Join(absRoot, agentos.JournalFile)
	}
	if _, err := os.Stat(path); err != nil && mustExist {
		return nil, usagef("no journal at %s: run a tool with 'agentos exec' first, or pass --journal PATH", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	return journal.Open(path, journal.Options{})
}
