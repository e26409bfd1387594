package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/journal"
)

// UIHandler is the node's web console (docs/CONSOLE.md) for an embedder
// to serve: every request needs a login with a capability token of the
// node, and its cookie is Secure (serve it over HTTPS, or use Console
// with Options.Addr for plain HTTP on loopback).
func (rt *Runtime) UIHandler() http.Handler {
	s, err := rt.Console(console.Options{TLS: true, Logger: rt.log})
	if err != nil { // only anonymous access can be refused, and it is not asked for
		panic(err)
	}
	return s
}

// Console is the node's web console with opts. Its sessions act as kernel
// processes holding tokens delegated from their login tokens; Close the
// server to end them (the node's Close ends them too).
func (rt *Runtime) Console(opts console.Options) (*console.Server, error) {
	if opts.Logger == nil {
		opts.Logger = rt.log
	}
	return console.New(&consoleBackend{rt: rt, procs: map[string]*kernel.Process{}}, opts)
}

// consoleBackend is the console's Backend over the node: each session's
// principal is a kernel process (the token's, spawned on login with a token
// delegated from it; the default process for anonymous access), and every
// read and action is checked against that process's token as the kernel
// tools check theirs (the same kernel calls: Covers for what a listing
// shows, Check for an action, the kernel tools themselves for files).
type consoleBackend struct {
	rt    *Runtime
	mu    sync.Mutex
	procs map[string]*kernel.Process // by Principal.ID
}

// anonID is the Principal.ID of anonymous access.
const anonID = "anon"

func (b *consoleBackend) Login(_ context.Context, enc string) (console.Principal, error) {
	tok, err := capability.Decode(enc)
	if err != nil {
		return console.Principal{}, fmt.Errorf("%w: %w; paste the token 'agentos token' printed, whole", console.ErrBadToken, err)
	}
	k := b.rt.Kernel()
	if err := k.Authority().Verify(tok); err != nil {
		return console.Principal{}, fmt.Errorf("%w: %w; mint a new one with 'agentos token' (tokens verify only on nodes with the same capability.signing_key_env)", console.ErrBadToken, err)
	}
	if _, err := b.procFor(tok); err != nil {
		return console.Principal{}, err
	}
	who := console.Principal{ID: "tok:" + tok.ID, Holder: tok.Holder, Rights: grantNames(tok.Grants)}
	for _, c := range tok.Caveats {
		if !c.NotAfter.IsZero() && (who.Expires.IsZero() || c.NotAfter.Before(who.Expires)) {
			who.Expires = c.NotAfter
		}
	}
	return who, nil
}

// procFor returns the live process of tok, spawning it on first use.
func (b *consoleBackend) procFor(tok capability.Token) (*kernel.Process, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.procs["tok:"+tok.ID]; ok {
		if _, ended := p.Reason(); !ended {
			return p, nil
		}
	}
	p, err := b.rt.Kernel().Spawn(consoleIdle, kernel.SpawnOptions{Image: "console", From: &tok})
	if err != nil {
		return nil, fmt.Errorf("%w: the token's process cannot start: %w", console.ErrBadToken, err)
	}
	b.procs["tok:"+tok.ID] = p
	return p, nil
}

// consoleIdle is the main of a console session's process: its calls come
// from the pages, so it waits to be told to end.
func consoleIdle(ctx context.Context, p *kernel.Process) error {
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return nil
		}
		if _, ok := m.Body.(*kernel.Term); ok {
			return nil
		}
	}
}

func grantNames(gs []capability.Grant) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = string(g.Right) + ":" + g.Scope
	}
	return out
}

func (b *consoleBackend) Anonymous(context.Context) (console.Principal, error) {
	p := b.rt.Agent()
	b.mu.Lock()
	b.procs[anonID] = p
	b.mu.Unlock()
	var rights []string
	if t, ok := p.Token(); ok {
		rights = grantNames(t.Grants)
	}
	return console.Principal{ID: anonID, Holder: p.Holder(), Rights: rights}, nil
}

func (b *consoleBackend) Verify(_ context.Context, who console.Principal) error {
	_, err := b.proc(who)
	return err
}

// proc is who's process, live with a live token.
func (b *consoleBackend) proc(who console.Principal) (*kernel.Process, error) {
	b.mu.Lock()
	p, ok := b.procs[who.ID]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: the session's process is gone: log in again", console.ErrBadToken)
	}
	if why, ended := p.Reason(); ended {
		return nil, fmt.Errorf("%w: the session's process ended (%s): log in again", console.ErrBadToken, why.Kind)
	}
	if t, ok := p.Token(); ok {
		if err := b.rt.Kernel().Authority().Verify(t); err != nil {
			return nil, fmt.Errorf("%w: %w: log in again with a live token", console.ErrBadToken, err)
		}
	}
	return p, nil
}

// maxScan bounds how many runs one listing reads to fill a filtered page:
// a page costs at most this many run records whatever the journal's size
// (about 90 ms on a loaded 2-core machine: BenchmarkConsolePages100k); a
// page that found too few says so and names the cursor to look further.
const maxScan = 2000

func (b *consoleBackend) ListRuns(_ context.Context, who console.Principal, q console.RunQuery) (console.RunPage, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.RunPage{}, err
	}
	jq := journal.RunQuery{Before: q.Before, After: q.After, Oldest: q.After != ""}
	var page console.RunPage
	var last string
	err = b.eachRun(q, jq, func(m journal.RunMeta) error {
		page.Scanned++
		last = m.ID
		if b.visibleRun(p, m) && matchRun(q, m) {
			page.Runs = append(page.Runs, runSummary(m))
		}
		if len(page.Runs) > q.Limit || page.Scanned >= maxScan {
			return errPageFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
			return page, fmt.Errorf("%w: %w", console.ErrBadInput, err)
		}
		return page, err
	}
	return pageCursors(page, q, last, errors.Is(err, errPageFull)), nil
}

// eachRun lists the runs q may match, newest first (oldest first after
// q.After): one tool's from the journal's index of runs by tool, which
// holds them however many runs of other tools came between, and
// otherwise every run by start.
func (b *consoleBackend) eachRun(q console.RunQuery, jq journal.RunQuery, fn func(journal.RunMeta) error) error {
	if q.Tool == "" || strings.HasSuffix(q.Tool, "/") || q.After != "" {
		return b.rt.j.EachRun(jq, fn)
	}
	return b.rt.j.EachRunOf(journal.ToolQuery{Tool: q.Tool, Before: q.Before}, fn)
}

// errPageFull stops a listing.
var errPageFull = errors.New("page full")

// pageCursors trims a page read in jq's order to q.Limit, newest first,
// and names its neighbours.
func pageCursors(page console.RunPage, q console.RunQuery, last string, stopped bool) console.RunPage {
	more := len(page.Runs) > q.Limit
	if more {
		page.Runs = page.Runs[:q.Limit]
	}
	page.Partial = stopped && !more && page.Scanned >= maxScan
	if q.After != "" { // read oldest first: shown newest first
		for i, j := 0, len(page.Runs)-1; i < j; i, j = i+1, j-1 {
			page.Runs[i], page.Runs[j] = page.Runs[j], page.Runs[i]
		}
		if len(page.Runs) > 0 {
			page.Before = page.Runs[len(page.Runs)-1].ID
			if more {
				page.After = page.Runs[0].ID
			}
		}
		return page
	}
	switch {
	case more:
		page.Before = page.Runs[len(page.Runs)-1].ID
	case page.Partial:
		page.Before = last
	}
	if q.Before != "" && len(page.Runs) > 0 {
		page.After = page.Runs[0].ID
	}
	return page
}

// visibleRun reports whether p may see run m (runVisibleTo, in
// console_visibility.go, says who may see which run).
func (b *consoleBackend) visibleRun(p *kernel.Process, m journal.RunMeta) bool {
	return runVisibleTo(p, m, b.rt.cfg.Tools())
}

// matchRun applies q's filters to m.
func matchRun(q console.RunQuery, m journal.RunMeta) bool {
	switch {
	case q.Kind != "" && m.Kind != q.Kind,
		q.Status != "" && m.Shown() != q.Status,
		q.Tool != "" && m.Tool != q.Tool && !(strings.HasSuffix(q.Tool, "/") && strings.HasPrefix(m.Tool, q.Tool)),
		q.Node != "" && runNode(m) != q.Node,
		!q.Since.IsZero() && m.Started.Before(q.Since),
		!q.Until.IsZero() && m.Started.After(q.Until):
		return false
	}
	return true
}

// runNode names the host process that ran m: pid@boot (its boot id's
// first 8 characters).
func runNode(m journal.RunMeta) string {
	if m.PID == 0 {
		return ""
	}
	boot := m.Boot
	if len(boot) > 8 {
		boot = boot[:8]
	}
	return fmt.Sprintf("%d@%s", m.PID, boot)
}

func runSummary(m journal.RunMeta) console.RunSummary {
	s := console.RunSummary{
		ID: m.ID, Kind: m.Kind, Tool: m.Tool, Hash: m.Hash, Status: m.Shown(),
		Started: m.Started, Ended: m.Ended, Calls: m.Calls, Node: runNode(m), ReplayOf: m.ReplayOf,
	}
	if m.Caller != nil {
		s.Caller = m.Caller.Process
	}
	return s
}

// readRun is run id if p may see it; one answer for "no run" and "not
// yours" (the ids of runs p may not read are not disclosed).
func (b *consoleBackend) readRun(who console.Principal, id string) (*kernel.Process, journal.RunMeta, error) {
	p, err := b.proc(who)
	if err != nil {
		return nil, journal.RunMeta{}, err
	}
	m, err := b.rt.j.Get(id)
	if err != nil || !b.visibleRun(p, m) {
		return nil, journal.RunMeta{}, fmt.Errorf("%w: no run %q that this token may read (a run shows to a token with read on its tool; docs/CONSOLE.md says who sees a forge or an agent run)", console.ErrNotFound, id)
	}
	return p, m, nil
}

func (b *consoleBackend) Run(_ context.Context, who console.Principal, id string) (console.RunDetail, error) {
	_, m, err := b.readRun(who, id)
	if err != nil {
		return console.RunDetail{}, err
	}
	entries, err := b.rt.j.Entries(m.ID)
	if err != nil {
		return console.RunDetail{}, err
	}
	m.Calls = len(entries)
	d := console.RunDetail{
		RunSummary: runSummary(m), Args: m.Args, Result: m.Result, Error: m.Error, Reason: m.Reason,
		Commit: m.Commit, TraceCommand: "agentos trace " + m.ID, Replayable: m.Kind == "exec" && m.Tool != "",
		Logs: m.Logs, LogsCut: m.LogsCut, LogsLimit: journal.MaxRunLogBytes, TraceID: m.TraceID,
	}
	if m.Hash != "" {
		d.Modules = append(d.Modules, console.Module{Path: m.Tool, Hash: m.Hash})
		if src, err := b.rt.j.Source(m.Hash); err == nil {
			d.Source = string(src)
		}
	}
	for _, mod := range m.Modules {
		d.Modules = append(d.Modules, console.Module{Path: mod.Path, Hash: mod.Hash})
	}
	for _, e := range entries {
		d.Calls = append(d.Calls, callOf(e))
	}
	return d, nil
}

func callOf(e journal.Entry) console.Call {
	c := console.Call{Seq: e.Seq, Driver: e.Driver, Op: e.Op, Request: e.Request, Response: e.Response, At: e.At, Duration: e.Duration, Sealed: e.Sealed}
	if e.Error != nil {
		c.Error = e.Error.Code + ": " + e.Error.Message
	}
	return c
}

// consoleReplayTimeout bounds a replay the console starts when the run
// recorded no limits.
const consoleReplayTimeout = time.Minute

func (b *consoleBackend) Replay(ctx context.Context, who console.Principal, req console.ReplayRequest) (console.ReplayResult, error) {
	p, m, err := b.readRun(who, req.Run)
	if err != nil {
		return console.ReplayResult{}, err
	}
	if m.Kind != "exec" || m.Tool == "" {
		return console.ReplayResult{}, fmt.Errorf("%w: run %s is of kind %s: the console replays tool runs ('agentos replay %s' replays the others)", console.ErrBadInput, m.ID, m.Kind, m.ID)
	}
	// A replay runs the tool's code (offline): exec on the tool, as
	// exec_tool checks it.
	if err := p.Check(capability.Exec, m.Tool); err != nil {
		return console.ReplayResult{}, fmt.Errorf("%w: %w", console.ErrDenied, err)
	}
	opts := execclient.ReplayOptions{}
	switch req.Mode {
	case console.ReplayEdited:
		if len(req.Source) == 0 {
			return console.ReplayResult{}, fmt.Errorf("%w: paste the edited source to replay it", console.ErrBadInput)
		}
		opts.Patched = req.Source
	case console.ReplayCurrent:
		if opts.Patched, err = b.readCurrent(ctx, p, m.Tool); err != nil {
			return console.ReplayResult{}, err
		}
	}
	rep, err := executor.ReplayWith(ctx, b.rt.ex, b.rt.j, m.ID, opts)
	if err != nil {
		return console.ReplayResult{}, fmt.Errorf("%w: %w", console.ErrBadInput, err)
	}
	return replayResult(rep, req.Mode), nil
}

// readCurrent reads the tool tree's current source of path through the
// read_file kernel tool, as p.
func (b *consoleBackend) readCurrent(ctx context.Context, p *kernel.Process, path string) ([]byte, error) {
	args, _ := json.Marshal(map[string]string{"path": path})
	out, err := b.rt.node.Call(ctx, p, "read_file", args)
	if err != nil {
		return nil, kernelErr(err)
	}
	var src string
	if err := json.Unmarshal(out, &src); err != nil {
		return nil, fmt.Errorf("read_file %s: %w", path, err)
	}
	return []byte(src), nil
}

// kernelErr marks a kernel tool's refusal as the console's.
func kernelErr(err error) error {
	if errors.Is(err, capability.ErrDenied) {
		return fmt.Errorf("%w: %w", console.ErrDenied, err)
	}
	return fmt.Errorf("%w: %w", console.ErrBadInput, err)
}

func replayResult(rep executor.ReplayReport, mode console.ReplaySource) console.ReplayResult {
	r := console.ReplayResult{
		Run: runSummary(rep.Run), Mode: mode, Patched: rep.Patched, Same: rep.Same,
		ReplayedOK: rep.Result.Success, LimitHit: rep.LimitHit, Logs: rep.Result.Logs,
	}
	r.Recorded = string(rep.Run.Result)
	if rep.Run.Status != "ok" {
		r.Recorded = "failed: " + string(rep.Run.Error)
	}
	r.Replayed = string(rep.Result.Result)
	if !rep.Result.Success && rep.Result.Error != nil {
		r.Replayed = "failed: " + string(rep.Result.Error.Kind) + ": " + rep.Result.Error.Message
	}
	if d := rep.Divergence; d != nil {
		r.Divergence = &console.Divergence{Code: d.Code, Message: d.Error(), Seq: d.Seq, Expected: d.Expected, Actual: d.Actual}
	}
	for _, n := range []string{rep.LimitsNote, rep.ModulesNote} {
		if n != "" {
			r.Notes = append(r.Notes, n)
		}
	}
	return r
}

func (b *consoleBackend) SaveSource(ctx context.Context, who console.Principal, path string, src []byte) (console.SaveResult, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.SaveResult{}, err
	}
	args, _ := json.Marshal(map[string]string{"path": path, "content": string(src)})
	out, err := b.rt.node.Call(ctx, p, "write_file", args)
	if err != nil {
		return console.SaveResult{}, kernelErr(err)
	}
	var w struct {
		Hash     string          `json:"hash"`
		Commit   string          `json:"commit"`
		Approval json.RawMessage `json:"approval"`
	}
	if err := json.Unmarshal(out, &w); err != nil {
		return console.SaveResult{}, fmt.Errorf("write_file %s: %w", path, err)
	}
	res := console.SaveResult{Path: path, Hash: w.Hash, Message: "The next runs of the tool run this version."}
	if len(w.Approval) > 0 && string(w.Approval) != "null" {
		res.Message = "It waits for an approval before it runs ('agentos approvals')."
	}
	return res, nil
}

// Close ends the sessions' processes (the node's Close ends every
// process; this is for a console closed before the node).
func (b *consoleBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, p := range b.procs {
		if id != anonID {
			_ = b.rt.Kernel().Kill(p.PID(), "console closed")
		}
	}
	clear(b.procs)
	return nil
}
