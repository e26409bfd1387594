package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// How commands share a tool root's journal. The journal is one bbolt file,
// locked by the one process that has it open. While 'agentos serve' runs,
// that is the node: every command that uses the journal goes through the
// node's socket instead (exec runs the tool on the node, runs and trace read
// its journal, replay fetches the run and replays it here, recover asks the
// node). With no node, a second 'agentos exec' in the root waits for the
// first to release the journal (bounded by its own run's timeout plus a
// minute, saying so on stderr) and, should a node start meanwhile, goes
// through it.

// nodeFor returns a client of the node serving absRoot when one does and
// the command's journal is the node's (jpath empty, or the node's file);
// nil when no node serves the root.
func nodeFor(absRoot string, cfg host.Config, jpath string) (*admin.Client, error) {
	if jpath != "" {
		abs, err := filepath.Abs(jpath)
		if err != nil {
			return nil, err
		}
		if abs != cfg.JournalPath(absRoot) && abs != filepath.Join(absRoot, host.JournalFile) {
			return nil, nil // another journal file than the node's: not the node's business
		}
	}
	c, err := admin.Dial(absRoot)
	if errors.Is(err, admin.ErrNoNode) {
		return nil, nil
	}
	return c, err
}

// parse parses args (wantArgs positional ones, described by what) and
// opens the tool root; open does the same and opens the journal.
func (c *journalCmd) parse(args []string, wantArgs int, what string) (pos []string, absRoot string, cfg host.Config, err error) {
	if pos, err = parseFlags(c.fs, args); err != nil {
		return nil, "", cfg, err
	}
	if len(pos) != wantArgs {
		if wantArgs == 0 {
			return nil, "", cfg, usagef("%s takes no arguments", c.fs.Name())
		}
		return nil, "", cfg, usagef("expected %s, got %d arguments", what, len(pos))
	}
	absRoot, cfg, err = openRoot(*c.root)
	return pos, absRoot, cfg, err
}

// runSource is what 'agentos runs' reads: the journal, or the node serving
// the root.
type runSource interface {
	EachRun(q journal.RunQuery, fn func(journal.RunMeta) error) error
	Close() error
}

// openRuns is open for 'agentos runs': the node's journal, through the
// node, when a node serves the root.
func (c *journalCmd) openRuns(ctx context.Context, args []string) (runSource, error) {
	_, absRoot, cfg, err := c.parse(args, 0, "")
	if err != nil {
		return nil, err
	}
	nc, err := nodeFor(absRoot, cfg, *c.jpath)
	if err != nil {
		return nil, err
	}
	if nc != nil {
		return &nodeRuns{ctx: ctx, c: nc}, nil
	}
	return openJournalToRead(absRoot, cfg, *c.jpath)
}

// nodeRuns reads the runs of a serving node's journal.
type nodeRuns struct {
	ctx context.Context
	c   *admin.Client
}

// nodePage is how many runs one request asks the node for: a listing of
// every run goes in pages, so that neither side holds the whole journal.
const nodePage = 256

// EachRun is journal.Journal.EachRun over the node's socket, nodePage runs
// a request.
func (n *nodeRuns) EachRun(q journal.RunQuery, fn func(journal.RunMeta) error) error {
	left := q.Limit
	for {
		page := q
		page.Limit = nodePage
		if q.Limit > 0 {
			page.Limit = min(nodePage, left)
		}
		sums, err := n.c.Runs(n.ctx, page)
		var ae *admin.AnswerError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return usagef("%s", ae.Message)
		}
		if err != nil {
			return err
		}
		for _, s := range sums {
			s.RunMeta.Calls = s.Calls
			if err := fn(s.RunMeta); err != nil {
				return err
			}
		}
		left -= len(sums)
		if len(sums) < page.Limit || (q.Limit > 0 && left == 0) {
			return nil
		}
		last := sums[len(sums)-1].ID
		if q.Oldest {
			q.After = last
		} else {
			q.Before = last
		}
	}
}

func (n *nodeRuns) Close() error { n.c.Close(); return nil }

// openRun is open for the commands about one run (trace, replay): the
// root's journal, read-only (openJournalToRead); or, when a node serves
// the root, the run (pos[0], an id or unique prefix) fetched from it into a
// private journal file of this process, which only this command sees
// (removed at once, gone when the journal closes). Reads and replay are
// then exactly those of the journal itself.
func (c *journalCmd) openRun(ctx context.Context, args []string, what string) (pos []string, absRoot string, cfg host.Config, j *journal.Journal, err error) {
	if pos, absRoot, cfg, err = c.parse(args, 1, what); err != nil {
		return nil, "", cfg, nil, err
	}
	nc, err := nodeFor(absRoot, cfg, *c.jpath)
	if err != nil {
		return nil, "", cfg, nil, err
	}
	if nc == nil {
		// Read-only: trace and replay only read the run, and an open for
		// writing would first rebuild bbolt's free-page list over the whole
		// file (0.4 s and 400 MB on a journal of 100,000 runs).
		j, err = openJournalToRead(absRoot, cfg, *c.jpath)
		return pos, absRoot, cfg, j, err
	}
	defer nc.Close()
	d, err := nc.Run(ctx, pos[0])
	if err != nil {
		return nil, "", cfg, nil, usagef("%v", err)
	}
	dir, err := os.MkdirTemp("", "agentos-node-run-*")
	if err != nil {
		return nil, "", cfg, nil, err
	}
	defer os.RemoveAll(dir) // the open journal keeps its unlinked file
	if j, err = cfg.OpenJournal(absRoot, filepath.Join(dir, "journal.db")); err != nil {
		return nil, "", cfg, nil, err
	}
	if err := j.Import(d); err != nil {
		j.Close()
		return nil, "", cfg, nil, fmt.Errorf("copying run %s from the serving node: %w", d.Run.ID, err)
	}
	return pos, absRoot, cfg, j, nil
}

// execJournal opens the journal 'agentos exec' records into, or returns the
// node to run on instead. While another command holds the journal it waits,
// bounded by the run's own timeout plus a minute (timeout 0: the root's
// default), says so on stderr, and goes through a node that starts
// meanwhile.
func execJournal(ctx context.Context, absRoot string, cfg host.Config, jpath string, timeout time.Duration, stderr io.Writer) (*admin.Client, *journal.Journal, error) {
	if timeout <= 0 {
		timeout = time.Duration(cfg.Limits.Timeout)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second // the sandbox's default
	}
	wait := timeout + time.Minute
	deadline := time.Now().Add(wait)
	told := false
	for {
		nc, err := nodeFor(absRoot, cfg, jpath)
		if err != nil || nc != nil {
			return nc, nil, err
		}
		j, err := openJournal(absRoot, cfg, jpath, false) // waits up to 2 s for the lock
		if err == nil || !errors.Is(err, journal.ErrLocked) {
			return nil, j, err
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("%w (waited %v): another agentos command in this tool root kept it; run 'agentos serve' so that commands share the journal through it, or pass --no-journal or --journal PATH", err, wait.Round(time.Second))
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if !told {
			told = true
			fmt.Fprintf(stderr, "agentos exec: the journal is in use by another agentos command in this tool root; waiting up to %v for it (Ctrl-C stops; --no-journal runs without recording)\n", wait.Round(time.Second))
		}
	}
}

// execOnNode runs the tool on the serving node: the same run, result and
// exit status as 'agentos exec' without a node, recorded in the node's
// journal.
func execOnNode(ctx context.Context, nc *admin.Client, rel string, args json.RawMessage, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) error {
	rep, err := nc.Exec(ctx, admin.ExecRequest{Path: rel, Args: args, Timeout: timeout})
	if err != nil {
		return err
	}
	return reportExec(stdout, stderr, asJSON, rep.Result, rep.Run)
}

// recoverOnNode asks the serving node to resume runs (only, or every
// unfinished one not in flight) and prints what it did, at its start and now.
func recoverOnNode(ctx context.Context, nc *admin.Client, req admin.RecoverRequest, asJSON bool, stdout io.Writer) error {
	var rec host.NodeRecovery
	if err := nc.Recover(ctx, req, &rec); err != nil {
		return err
	}
	if asJSON {
		if err := fprintJSON(stdout, rec); err != nil {
			return err
		}
		return recoverOutput{Recovered: rec.Now, Forges: rec.Forges}.status()
	}
	if len(rec.AtStart) > 0 {
		fmt.Fprintf(stdout, "the serving node (pid %d) recovered these runs when it started:\n", rec.PID)
		printRecovered(stdout, rec.AtStart)
	}
	switch {
	case len(rec.Now) > 0 || len(rec.Forges) > 0:
		fmt.Fprintf(stdout, "the serving node (pid %d) resumed now:\n", rec.PID)
		printRecovered(stdout, rec.Now)
		printForges(stdout, rec.Forges)
	case len(rec.Left) > 0:
	case len(rec.AtStart) > 0:
		fmt.Fprintln(stdout, "no other unfinished runs")
	default:
		fmt.Fprintf(stdout, "no unfinished runs (the serving node, pid %d, resumes a root's runs when it starts)\n", rec.PID)
	}
	printLeft(stdout, rec.Left)
	return recoverOutput{Recovered: rec.Now, Forges: rec.Forges}.status()
}
