package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentos-run/agentos/journal"
)

// pruneReport is what `agentos runs prune --json` prints.
type pruneReport struct {
	journal.PruneReport
	FileBefore int64 `json:"file_before"`
	FileAfter  int64 `json:"file_after"`
	Compacted  bool  `json:"compacted"`
}

// runPrune deletes old runs and the payloads only they used, then compacts
// the journal file: agentos runs prune [--root DIR] [--journal PATH]
// [--json] [--older-than D] [--keep N] [--keep-bytes N] [--no-compact].
// Without a bound it applies the tool root's retention (agentos.json).
func runPrune(args []string, stdout io.Writer) error {
	c := newJournalCmd("runs prune", "print one JSON object: what was deleted, the file's size before and after")
	olderThan := durationFlag(c.fs, "older-than", "delete the runs started longer ago than `D`, e.g. 30d, 12h or 90m")
	keep := c.fs.Int("keep", 0, "keep only the N most recent runs")
	keepBytes := c.fs.Int64("keep-bytes", 0, "delete the oldest runs until the journal stores at most N bytes")
	noCompact := c.fs.Bool("no-compact", false, "do not rewrite the file: it keeps its size and reuses the freed space")
	_, absRoot, cfg, j, err := c.open(args, 0, "")
	if err != nil {
		return err
	}
	opts := journal.PruneOptions{KeepRuns: *keep, KeepBytes: *keepBytes, OlderThan: *olderThan}
	if *keep < 0 || *keepBytes < 0 {
		j.Close()
		return usagef("--keep and --keep-bytes must be positive")
	}
	if opts == (journal.PruneOptions{}) {
		opts = cfg.PruneOptions() // the configured retention
	}
	path, shared := j.Path(), j.Shared()
	rep := pruneReport{FileBefore: fileSize(path)}
	rep.PruneReport, err = j.Prune(opts)
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	rep.FileAfter = fileSize(path)
	if !*noCompact && !shared { // PostgreSQL reuses the space itself (autovacuum)
		if _, rep.FileAfter, err = journal.Compact(path); err != nil {
			return err
		}
		rep.Compacted = true
	}
	if *c.asJSON {
		return fprintJSON(stdout, rep)
	}
	printPrune(stdout, rep, absRoot, path, shared)
	return nil
}

// printPrune says what prune deleted and what became of the journal's
// file: compacted, keeping its size, or (shared: PostgreSQL) left to the
// database.
func printPrune(stdout io.Writer, rep pruneReport, absRoot, path string, shared bool) {
	fmt.Fprintf(stdout, "deleted %d runs, %d payloads and %d tool sources (%s stored); %d runs kept\n", rep.Runs, rep.Blobs, rep.Sources, mb(rep.Bytes), rep.Kept)
	switch {
	case shared:
		fmt.Fprintf(stdout, "journal %s: PostgreSQL reuses the freed space (autovacuum); VACUUM FULL gives it back to the file system\n", path)
	case rep.Compacted:
		fmt.Fprintf(stdout, "journal %s: %s -> %s\n", relTo(absRoot, path), mb(rep.FileBefore), mb(rep.FileAfter))
	default:
		fmt.Fprintf(stdout, "journal %s: %s (the file keeps its size and reuses the freed space; run without --no-compact, with no node serving, to shrink it)\n", relTo(absRoot, path), mb(rep.FileAfter))
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
