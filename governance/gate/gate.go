package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/internal/clip"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// Defaults of Options.
const (
	// DefaultRuns is how many runs of the previous version are replayed.
	DefaultRuns = 5
	// DefaultTimeout caps the timeout of one replay.
	DefaultTimeout = 10 * time.Second
	// DefaultParallel is how many replays run at once.
	DefaultParallel = 2
)

// Policy says what a write does when the gate finds a changed run.
type Policy string

const (
	// PolicyWarn lets the write land with the report (the default).
	PolicyWarn Policy = "warn"
	// PolicyBlock refuses the write when a run gave a different result or
	// diverged: nothing is written, registered or committed.
	PolicyBlock Policy = "block"
)

// ErrBlocked: the gate refused a write under PolicyBlock. The error
// names the runs that changed and says what to do.
var ErrBlocked = errors.New("the registration gate refused the new version")

// Options configure a Gate. The zero value replays DefaultRuns runs under
// PolicyWarn, each capped at DefaultTimeout.
type Options struct {
	// Runs is how many of the previous version's most recent runs are
	// replayed: 0 means DefaultRuns, a negative value disables the gate.
	Runs int
	// Policy is PolicyWarn ("" too) or PolicyBlock.
	Policy Policy
	// BlockOnError, under PolicyBlock, also refuses a write when a run
	// could not be judged (its replay failed, or stopped at a limit, as a
	// new version that loops does). nil means true under PolicyBlock: a
	// version that cannot be judged is not let through by a policy meant
	// to refuse unjudged changes. Set it to false explicitly to have such
	// runs reported (OutcomeError) without blocking. Ignored under
	// PolicyWarn.
	BlockOnError *bool
	// Timeout caps the timeout of one replay (its recorded timeout when
	// shorter). 0 means DefaultTimeout.
	Timeout time.Duration
	// Parallel is how many replays run at once (0: DefaultParallel). The
	// composition root caps it at the executor's workers: a replay beyond
	// them would only wait for one.
	Parallel int
}

// Validate reports a bad option (an unknown policy, a negative timeout).
func (o Options) Validate() error {
	switch o.Policy {
	case "", PolicyWarn, PolicyBlock:
	default:
		return fmt.Errorf("gate policy %q is not known: use %q or %q", o.Policy, PolicyWarn, PolicyBlock)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("gate timeout %v must be positive", o.Timeout)
	}
	return nil
}

// BlocksOnError says whether a run that could not be judged refuses the
// write: under PolicyBlock unless BlockOnError is explicitly false.
func (o Options) BlocksOnError() bool {
	return o.Policy == PolicyBlock && (o.BlockOnError == nil || *o.BlockOnError)
}

// Enabled says the gate replays anything.
func (o Options) Enabled() bool { return o.Runs >= 0 }

func (o Options) withDefaults() Options {
	if o.Runs == 0 {
		o.Runs = DefaultRuns
	}
	if o.Policy == "" {
		o.Policy = PolicyWarn
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	return o
}

// Outcome is what the replay of one run against the new version gave.
type Outcome string

const (
	// OutcomeSame: the new version followed the recorded I/O and gave the
	// recorded result (or failed the same way).
	OutcomeSame Outcome = "same"
	// OutcomeDifferent: the new version followed the recorded I/O and
	// gave another result (RunReport.Old and New).
	OutcomeDifferent Outcome = "different"
	// OutcomeDivergence: the new version asked for other I/O than the
	// run recorded (RunReport.Code, Seq): it was stopped there, nothing
	// was performed.
	OutcomeDivergence Outcome = "divergence"
	// OutcomeError: the run could not be judged: it could not be replayed
	// (RunReport.Detail says why), or the replay stopped at a limit.
	OutcomeError Outcome = "error"
)

// RunReport is the replay of one recorded run against the new version.
type RunReport struct {
	// Run is the recorded run's id; Started when it ran; Args its
	// arguments (clipped).
	Run     string    `json:"run"`
	Started time.Time `json:"started"`
	// Tool, when set, is the entry whose run this is: the changed file is
	// a module that entry required (the run is replayed with the
	// module's new source, its entry and other modules as recorded).
	Tool    string  `json:"tool,omitempty"`
	Args    string  `json:"args,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Old is the recorded result (or "failed: kind: message"), New the new
	// version's, both clipped to about 400 bytes.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Code and Seq are a divergence's stable code (e.g. "AGENTOS-J001")
	// and the sequence number of the call where it diverged.
	Code string `json:"code,omitempty"`
	Seq  uint64 `json:"seq,omitempty"`
	// Detail says more: the divergence (expected vs actual), the limit a
	// replay stopped at, or why it could not be replayed.
	Detail string `json:"detail,omitempty"`
}

// Report is what the gate found for one change of one tool.
type Report struct {
	Path string `json:"path"`
	// OldHash is the content hash of the previous version, the one whose
	// recorded runs were replayed; NewHash the new one's.
	OldHash string `json:"old_hash"`
	NewHash string `json:"new_hash"`
	// ReplacedHash is the content hash of the version being replaced when
	// it is not OldHash: it has no recorded run to replay (it was written
	// and never ran, e.g. a comment-only change), so the runs of the
	// newest earlier version that has some were replayed instead.
	ReplacedHash string `json:"replaced_hash,omitempty"`
	// Previous says, in words, where the previous version came from when
	// it is not the file the write replaces: an earlier version because
	// the replaced one never ran, or the newest recorded version of a file
	// edited in place (see PreviousHash).
	Previous string `json:"previous,omitempty"`
	Policy   Policy `json:"policy"`
	// Dependents is how many of Runs are runs of other tools that
	// required the previous version of the changed file as a module
	// (RunReport.Tool names each one's entry).
	Dependents int `json:"dependents,omitempty"`
	// Found is how many finished runs of the previous version the journal
	// holds; Skipped how many of them were left out because their
	// arguments were redacted; Runs the ones replayed (at most
	// Options.Runs, newest first).
	Found   int         `json:"found"`
	Skipped int         `json:"skipped,omitempty"`
	Runs    []RunReport `json:"runs"`
	// Counts of Runs by outcome.
	Same       int `json:"same"`
	Different  int `json:"different"`
	Divergence int `json:"divergence"`
	Errors     int `json:"errors"`
	// Blocked says the policy refuses the write (see Err).
	Blocked bool `json:"blocked"`
	// Note says why nothing was replayed (no journal, no runs), or that
	// the gate could not read the journal.
	Note string `json:"note,omitempty"`
}

// Changed lists the runs whose outcome is not the same, each as
// "ID (different: OLD -> NEW)", "ID (divergence [CODE] at call #SEQ)" or
// "ID (error: WHY)", clipped.
func (r Report) Changed() []string {
	var out []string
	for _, x := range r.Runs {
		switch x.Outcome {
		case OutcomeSame:
		case OutcomeDifferent:
			out = append(out, fmt.Sprintf("%s (different: %s -> %s)", x.Run, clip.N(x.Old, 60), clip.N(x.New, 60)))
		case OutcomeDivergence:
			out = append(out, fmt.Sprintf("%s (divergence [%s] at call #%d)", x.Run, x.Code, x.Seq))
		default:
			out = append(out, fmt.Sprintf("%s (error: %s)", x.Run, clip.N(x.Detail, 100)))
		}
	}
	return out
}

// Summary is one line: what was replayed and what came of it.
func (r Report) Summary() string {
	if len(r.Runs) == 0 {
		return "gate: " + r.Note
	}
	s := fmt.Sprintf("gate: replayed %d recorded run(s) of the previous version of %s against the new one: %d same, %d different, %d divergent, %d error(s)",
		len(r.Runs), r.Path, r.Same, r.Different, r.Divergence, r.Errors)
	if r.Dependents > 0 {
		s += fmt.Sprintf(" (%d of them runs of tools that require it)", r.Dependents)
	}
	if r.Previous != "" {
		s += " (previous version: " + r.Previous + ")"
	}
	if r.Blocked {
		s += " (policy block: refused)"
	}
	return s
}

// Err is nil unless the policy refused the write: then an error wrapping
// ErrBlocked that names the changed runs and says what can be done. It
// addresses whoever made the write, often an agent: IMPORTANT: it MUST NOT
// suggest weakening the policy; accepting a change of behaviour is a
// human operator's decision.
func (r Report) Err() error {
	if !r.Blocked {
		return nil
	}
	if len(r.Runs) == 0 {
		return fmt.Errorf("%w: %s: the gate could not judge the new version (%s), and under policy block a version that cannot be judged is refused (governance.gate.block_on_error). Nothing was written, registered or committed. A human operator can look into it with 'agentos check --against-runs %s' on the node's tool tree", ErrBlocked, r.Path, r.Note, r.Path)
	}
	prev := "the previous version (" + short(r.OldHash) + ")"
	if r.ReplacedHash != "" {
		prev = "version " + short(r.OldHash) + " (the version being replaced, " + short(r.ReplacedHash) + ", has no recorded run: the newest earlier version that has runs)"
	}
	return fmt.Errorf("%w: %s: replaying %d recorded run(s) of %s gave %d different result(s), %d divergence(s) and %d error(s): %s. Nothing was written, registered or committed. "+
		"Fix the new version so that these runs keep their recorded results. "+
		"If the change of behaviour is intended, it is for a human operator to accept: they can replay these runs against the new version with 'agentos check --against-runs %s' (the new version in that file) or 'agentos replay RUN --tool NEW.ts', and decide whether it lands",
		ErrBlocked, r.Path, len(r.Runs), prev, r.Different, r.Divergence, r.Errors, strings.Join(r.Changed(), ", "), r.Path)
}

func (r *Report) count() {
	r.Same, r.Different, r.Divergence, r.Errors = 0, 0, 0, 0
	for _, x := range r.Runs {
		switch x.Outcome {
		case OutcomeSame:
			r.Same++
		case OutcomeDifferent:
			r.Different++
		case OutcomeDivergence:
			r.Divergence++
		default:
			r.Errors++
		}
	}
}

// Gate replays recorded runs of a tool's previous version against a new
// one. It is safe for concurrent use.
type Gate struct {
	ex   *execclient.Client
	j    *journal.Journal
	opts Options
}

// New returns a gate that chooses the runs to replay from j and has the
// executor actor ex replay them (Replay messages, through its client).
// IMPORTANT: ex MUST be the client of an executor actor whose journal is j
// (executor.ActorOptions.Journal): the runs are chosen here and replayed
// there. ex may be bound after New (the composition root binds its clients
// when the actor tree has started), but before the first Check. j may be
// nil: nothing is recorded, so nothing is replayed and every report says
// so.
func New(ex *execclient.Client, j *journal.Journal, opts Options) (*Gate, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if ex == nil {
		return nil, errors.New("gate: New needs an executor")
	}
	return &Gate{ex: ex, j: j, opts: opts.withDefaults()}, nil
}

// Options returns the gate's options, defaults filled in.
func (g *Gate) Options() Options { return g.opts }

// Applies says whether a write of path from old to new content is gated:
// a tool source (.ts or .js, not a test) that existed and changes.
func Applies(path string, old, new []byte) bool {
	if old == nil || string(old) == string(new) {
		return false
	}
	return IsTool(path)
}

// IsTool says whether path is a tool source the gate looks at: .ts or .js,
// not a test (.test.), not in a dot directory (the forge's staging).
func IsTool(path string) bool {
	if !strings.HasSuffix(path, ".ts") && !strings.HasSuffix(path, ".js") {
		return false
	}
	if strings.Contains(path, ".test.") || strings.HasPrefix(path, ".") || strings.Contains(path, "/.") {
		return false
	}
	return true
}

// Check replays the most recent recorded runs of the version of path whose
// content is old against newSrc, and applies the policy. It never writes
// anything: the caller writes (or, when the report is Blocked, refuses).
func (g *Gate) Check(ctx context.Context, path string, old, newSrc []byte) Report {
	return g.CheckHash(ctx, path, transpile.Hash(old), newSrc)
}

// CheckHash is Check with the previous version named by its content hash
// (as the journal and the registry know it).
func (g *Gate) CheckHash(ctx context.Context, path, oldHash string, newSrc []byte) Report {
	r := Report{Path: path, OldHash: oldHash, NewHash: transpile.Hash(newSrc), Policy: g.opts.Policy, Runs: []RunReport{}}
	switch {
	case !g.opts.Enabled():
		r.Note = "disabled (governance.gate.runs is 0)"
		return r
	case g.j == nil:
		r.Note = "no journal: no run of the previous version was recorded, nothing to replay"
		return r
	}
	all, err := g.j.Runs()
	if err != nil {
		r.Note = "the journal's runs could not be read: " + err.Error()
		r.Blocked = g.opts.BlocksOnError()
		return r
	}
	runs, found, skipped := Select(all, path, oldHash, g.opts.Runs)
	r.Found, r.Skipped = found, skipped
	if len(runs) == 0 && oldHash != "" {
		// IMPORTANT: the version being replaced never ran (a comment-only
		// change, or one that did not compile, written just before): its
		// lack of runs MUST NOT let the next change through unjudged, so
		// the runs of the newest earlier version that has some are
		// replayed. Never the new source's own runs.
		if prev, ok := PreviousHash(all, path, r.NewHash, oldHash); ok {
			why := "it has no recorded run"
			if skipped > 0 {
				why = fmt.Sprintf("its %d recorded run(s) have redacted arguments", skipped)
			}
			r.OldHash, r.ReplacedHash = prev, oldHash
			r.Previous = fmt.Sprintf("%s, the newest earlier version with recorded runs: the version being replaced (%s) was not used, %s", short(prev), short(oldHash), why)
			runs, r.Found, r.Skipped = Select(all, path, prev, g.opts.Runs)
		}
	}
	// IMPORTANT: a module's change replays the runs of the entries that
	// required it (each run records its modules' hashes): a change to a
	// library never lands unjudged because nobody runs the library itself.
	deps := Dependents(all, path, oldHash, r.NewHash, g.opts.Runs)
	r.Dependents = len(deps)
	if len(runs) == 0 && len(deps) == 0 {
		r.Note = fmt.Sprintf("no recorded run of the previous version of %s (%s) or of an earlier one to replay", path, short(oldHash))
		if skipped > 0 {
			r.Note += fmt.Sprintf(" (%d skipped: their arguments were redacted)", skipped)
		}
		return r
	}
	r.Runs = make([]RunReport, len(runs)+len(deps))
	sem := make(chan struct{}, g.opts.Parallel)
	var wg sync.WaitGroup
	for i, m := range append(runs, deps...) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if i < len(runs) {
				r.Runs[i] = g.replay(ctx, m, execclient.ReplayOptions{Patched: newSrc})
				return
			}
			r.Runs[i] = g.replay(ctx, m, execclient.ReplayOptions{Sources: map[string][]byte{path: newSrc}})
			r.Runs[i].Tool = m.Tool
		}()
	}
	wg.Wait()
	r.count()
	if g.opts.Policy == PolicyBlock {
		r.Blocked = r.Different > 0 || r.Divergence > 0 || (g.opts.BlocksOnError() && r.Errors > 0)
	}
	return r
}

// PreviousHash returns the content hash of the newest version of path
// that has runs the gate can replay (finished exec runs, not replays, with
// their arguments: see Select) and is neither newHash nor one of the
// excluded hashes: the version whose runs were recorded last before the
// new one. Versions are ordered by their newest run made as the tool's
// current file (a run of an old version called by its hash, at_version,
// does not make that version newer). It is what 'agentos check
// --against-runs' compares a locally edited file with, and what the gate
// falls back to when the version being replaced has no run (exclude it).
// ok is false when the journal has no such run.
func PreviousHash(all []journal.RunMeta, path, newHash string, exclude ...string) (hash string, ok bool) {
	want, err := vfs.Clean(path)
	if err != nil {
		want = path
	}
	var newest time.Time
	for _, m := range all {
		tool, err := vfs.Clean(m.Tool)
		if err != nil {
			tool = m.Tool
		}
		if tool != want || m.Hash == "" || m.Hash == newHash || slices.Contains(exclude, m.Hash) || !replayable(m) || m.AtVersion {
			continue
		}
		if !ok || m.Started.After(newest) {
			hash, newest, ok = m.Hash, m.Started, true
		}
	}
	return hash, ok
}

// replayable says the gate can replay run m: a finished exec run (ok or
// failed) that is not a replay or recovery and kept its arguments.
func replayable(m journal.RunMeta) bool {
	return m.ReplayOf == "" && (m.Kind == "" || m.Kind == "exec") &&
		(m.Status == journal.StatusOK || m.Status == journal.StatusFailed) && !m.ArgsRedacted
}

// CheckNewest is CheckHash against the newest recorded version of path
// other than newSrc's (PreviousHash): how a file edited in place, whose
// previous content is gone, is checked.
func (g *Gate) CheckNewest(ctx context.Context, path string, newSrc []byte) Report {
	newHash := transpile.Hash(newSrc)
	if g.j != nil && g.opts.Enabled() {
		all, err := g.j.Runs()
		if err == nil {
			if prev, ok := PreviousHash(all, path, newHash); ok {
				r := g.CheckHash(ctx, path, prev, newSrc)
				r.Previous = "the newest recorded version other than the new one"
				return r
			}
			if deps := Dependents(all, path, "", newHash, 1); len(deps) > 0 {
				// A module: the runs of the tools that required it.
				return g.CheckHash(ctx, path, "", newSrc)
			}
			return Report{Path: path, NewHash: newHash, Policy: g.opts.Policy, Runs: []RunReport{},
				Note: fmt.Sprintf("no recorded run of another version of %s to replay", path)}
		}
	}
	return g.CheckHash(ctx, path, "", newSrc)
}

// Select returns the runs of path's version oldHash the gate replays: its
// finished runs (ok or failed), not replays, with their arguments, the
// newest n first; found counts its finished runs, skipped those left out
// for redacted arguments.
func Select(all []journal.RunMeta, path, oldHash string, n int) (runs []journal.RunMeta, found, skipped int) {
	want, err := vfs.Clean(path)
	if err != nil {
		want = path
	}
	for _, m := range all {
		tool, err := vfs.Clean(m.Tool)
		if err != nil {
			tool = m.Tool
		}
		if tool != want || m.Hash != oldHash || m.ReplayOf != "" || (m.Kind != "" && m.Kind != "exec") {
			continue
		}
		if m.Status != journal.StatusOK && m.Status != journal.StatusFailed {
			continue
		}
		found++
		if m.ArgsRedacted {
			skipped++
			continue
		}
		runs = append(runs, m)
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].Started.After(runs[b].Started) })
	if n >= 0 && len(runs) > n {
		runs = runs[:n]
	}
	return runs, found, skipped
}

// Dependents returns the runs of other tools that required the module
// path at version oldHash (journal.RunMeta.Modules), replayable as Select's
// are (finished exec runs, not replays, with their arguments): the newest
// n of each entry, newest first. When no run required oldHash (the version
// being replaced never ran, e.g. a comment-only change just before), the
// runs that required the newest other version of the module but newHash
// are taken instead, as CheckHash does for an entry: a module's lack of
// runs MUST NOT let the next change through unjudged.
func Dependents(all []journal.RunMeta, path, oldHash, newHash string, n int) []journal.RunMeta {
	want, err := vfs.Clean(path)
	if err != nil {
		want = path
	}
	required := func(m journal.RunMeta) (string, bool) {
		if !replayable(m) || m.AtVersion {
			return "", false
		}
		if tool, err := vfs.Clean(m.Tool); err == nil && tool == want {
			return "", false // the module's own runs: Select's
		}
		for _, mod := range m.Modules {
			if mod.Path == want {
				return mod.Hash, true
			}
		}
		return "", false
	}
	hash := oldHash
	if !slices.ContainsFunc(all, func(m journal.RunMeta) bool { h, ok := required(m); return ok && h == oldHash }) {
		var newest time.Time
		hash = ""
		for _, m := range all {
			if h, ok := required(m); ok && h != newHash && (hash == "" || m.Started.After(newest)) {
				hash, newest = h, m.Started
			}
		}
		if hash == "" {
			return nil
		}
	}
	var runs []journal.RunMeta
	for _, m := range all {
		if h, ok := required(m); ok && h == hash {
			runs = append(runs, m)
		}
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].Started.After(runs[b].Started) })
	if n < 0 {
		return runs
	}
	kept, per := runs[:0], map[string]int{}
	for _, m := range runs {
		if per[m.Tool] < n {
			per[m.Tool]++
			kept = append(kept, m)
		}
	}
	return kept
}

// replay replays run m with opts (the new entry, or a module's new
// source), offline, bounded by the gate timeout.
func (g *Gate) replay(ctx context.Context, m journal.RunMeta, opts execclient.ReplayOptions) RunReport {
	rr := RunReport{Run: m.ID, Started: m.Started, Args: clip.N(string(m.Args), 200), Old: recorded(m)}
	// The run's own timeout (recorded, else the executor's default),
	// capped at the gate's: the executor actor applies the cap.
	opts.MaxTimeout = g.opts.Timeout
	rep, err := g.ex.Replay(ctx, m.ID, opts)
	if err != nil {
		rr.Outcome, rr.Detail = OutcomeError, "the run could not be replayed: "+clip.N(err.Error(), 400)
		return rr
	}
	rr.New = replayed(rep.Result)
	switch d := rep.Divergence; {
	case d != nil:
		rr.Outcome, rr.Code, rr.Seq, rr.Detail = OutcomeDivergence, d.Code, d.Seq, clip.N(d.Error(), 600)
	case rep.LimitHit != "" && !rep.Same:
		rr.Outcome, rr.Detail = OutcomeError, "the replay stopped at its limit ("+rep.LimitHit+") before the run's end"
		if rep.LimitsNote != "" {
			rr.Detail += "; " + rep.LimitsNote
		}
	case rep.Same:
		rr.Outcome = OutcomeSame
	default:
		rr.Outcome = OutcomeDifferent
	}
	return rr
}

// recorded is a run's recorded outcome as text.
func recorded(m journal.RunMeta) string {
	if m.Status == journal.StatusOK {
		return clip.N(string(m.Result), 400)
	}
	var e struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(m.Error, &e) == nil && e.Kind != "" {
		return clip.N("failed: "+e.Kind+": "+e.Message, 400)
	}
	return clip.N("failed: "+string(m.Error), 400)
}

// replayed is a replay's outcome as text.
func replayed(res execclient.Result) string {
	if res.Success {
		return clip.N(string(res.Result), 400)
	}
	if res.Error == nil {
		return "failed"
	}
	return clip.N("failed: "+string(res.Error.Kind)+": "+res.Error.Message, 400)
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
