package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

// ReplayReport compares a replayed run with its recording.
type ReplayReport struct {
	// Run is the recorded run.
	Run journal.RunMeta `json:"run"`
	// Result is what the replay produced.
	Result execclient.Result `json:"result"`
	// Patched says the replay ran a different source than the recorded one.
	Patched bool `json:"patched"`
	// Same says the replay's result (or error kind) equals the recorded one.
	Same bool `json:"same"`
	// Divergence is the first point where the code asked for other I/O
	// than recorded; nil when it followed the recording.
	Divergence *journal.DivergenceError `json:"divergence,omitempty"`
	// Limits are the limits the replay ran under: the run's recorded ones,
	// with ReplayOptions.Limits over them. LimitsNote says when they are
	// not simply the recorded ones (overridden, or never recorded).
	Limits     Limits `json:"limits"`
	LimitsNote string `json:"limits_note,omitempty"`
	// LimitHit is set when the replay stopped at one of its limits (the
	// result's error says which): IMPORTANT: that is not a divergence, and
	// the recorded calls the replay never reached are not reported as one.
	LimitHit string `json:"limit_hit,omitempty"`
	// Modules are the recorded modules the replay ran (the run's pinned
	// versions, loaded from the journal), with Sources' replacements.
	// FromTree are the modules it required that the run did not record,
	// read from the tool tree as it is now (a patched tool's new
	// requires, or every require of a run recorded before agentos pinned
	// modules); ModulesNote says so in words ("" when every module was
	// the recorded one).
	Modules     []journal.Module `json:"modules,omitempty"`
	FromTree    []string         `json:"from_tree,omitempty"`
	ModulesNote string           `json:"modules_note,omitempty"`
}

// Replay re-executes run id offline: every driver call is answered from the
// journal and no device is touched. patched, when not nil, is a new version
// of the tool fed the recorded I/O (how a user debugs a bad tool); otherwise
// the recorded source is run, even if the file changed since.
//
// The run is replayed under the limits it was recorded with (see
// ReplayWith to override them).
func Replay(ctx context.Context, ex *Executor, j *journal.Journal, id string, patched []byte) (ReplayReport, error) {
	return ReplayWith(ctx, ex, j, id, execclient.ReplayOptions{Patched: patched})
}

// ReplayWith is Replay with options. A replay that stops at one of its
// limits (its timeout, memory, output or call-depth limit) reports it in
// LimitHit, never as a divergence: the code did not ask for other I/O, it
// ran out of room before it asked for the rest.
func ReplayWith(ctx context.Context, ex *Executor, j *journal.Journal, id string, opts execclient.ReplayOptions) (ReplayReport, error) {
	patched := opts.Patched
	rep, err := j.Replayer(id)
	if err != nil {
		return ReplayReport{}, err
	}
	meta := rep.Meta()
	if meta.Kind != "" && meta.Kind != "exec" {
		// A snapshot's run names its sealed bytes, an agent's or a
		// forge's names no tool: none is code to run here. A forge's
		// loop replays through forge.Replay (agentos replay does).
		hint := "agentos trace shows any run"
		if meta.Kind == "forge" {
			hint = "a forge replays with forge.Replay, or agentos replay " + meta.ID
		}
		return ReplayReport{}, fmt.Errorf("run %s is of kind %s, not a tool run: only tool runs (kind exec) are replayed here (%s)", meta.ID, meta.Kind, hint)
	}
	src := patched
	if src == nil {
		if src, err = j.Source(meta.Hash); err != nil {
			return ReplayReport{}, fmt.Errorf("run %s cannot be replayed: %w", meta.ID, err)
		}
	}
	lim, note := runLimits(ex, meta, replayLimits(ex, meta, opts))
	pins := runPins(j, meta)
	pins.Override = opts.Sources
	res := ex.Exec(ctx, Request{Path: meta.Tool, Args: meta.Args, Source: src, Limits: lim, Middleware: []driver.Middleware{rep.Middleware()}, Replayed: true, Recorded: rep, Pins: pins, recording: rep})
	r := ReplayReport{Run: meta, Result: res, Patched: patched != nil, Limits: lim, LimitsNote: note, Modules: meta.Modules, FromTree: pins.FromTree()}
	r.ModulesNote = modulesNote(meta, r.FromTree, opts.Sources)
	if r.LimitHit = limitHit(res, lim); r.LimitHit != "" {
		r.Divergence = rep.Diverged() // only one seen before the limit stopped it
	} else {
		r.Divergence = rep.Finish()
	}
	// The recorded result was scrubbed of the run's secrets: compare the
	// replayed one scrubbed the same way.
	scrubbed := res
	if res.Success {
		scrubbed.Result = rep.Redact(res.Result)
	} else if b, err := json.Marshal(res.Error); err == nil {
		var e Error
		if json.Unmarshal(rep.Redact(b), &e) == nil {
			scrubbed.Error = &e
		}
	}
	r.Same = sameOutcome(meta, scrubbed)
	return r, nil
}

// replayLimits is opts.Limits with opts.MaxTimeout applied: when the
// run's timeout (opts.Limits', else its recorded one, else the executor's
// default) is longer than MaxTimeout, or unbounded, the replay runs under
// MaxTimeout.
func replayLimits(ex *Executor, meta journal.RunMeta, opts execclient.ReplayOptions) Limits {
	lim := opts.Limits
	if opts.MaxTimeout <= 0 {
		return lim
	}
	base := ex.Options().Limits.Timeout
	if rec, ok := RecordedLimits(meta); ok && rec.Timeout > 0 {
		base = rec.Timeout
	}
	if lim.Timeout > 0 {
		base = lim.Timeout
	}
	if base <= 0 || base > opts.MaxTimeout {
		lim.Timeout = opts.MaxTimeout
	}
	return lim
}

// limitHit says which limit a run stopped at ("" when none): its error's
// kind and the limit, e.g. "timeout 5s".
func limitHit(res execclient.Result, lim Limits) string {
	if res.Error == nil {
		return ""
	}
	switch res.Error.Kind {
	case ErrTimeout.Kind:
		return fmt.Sprintf("%s %v", res.Error.Kind, lim.Timeout)
	case ErrMemoryLimit.Kind:
		return fmt.Sprintf("%s %d bytes", res.Error.Kind, lim.MemoryBytes)
	case ErrOutput.Kind:
		return fmt.Sprintf("%s %d bytes", res.Error.Kind, lim.MaxOutputBytes)
	case ErrStack.Kind:
		return fmt.Sprintf("%s %d frames", res.Error.Kind, lim.MaxCallDepth)
	}
	return ""
}

// runLimits returns the limits a recorded run is run again under (its
// recorded ones, override over them field by field) and, when they are not
// simply the recorded ones, a note saying so. A run recorded before agentos
// kept its limits gets the executor's defaults (the tool root's).
func runLimits(ex *Executor, meta journal.RunMeta, override Limits) (Limits, string) {
	rec, recorded := RecordedLimits(meta)
	base := rec.Or(ex.Options().Limits)
	lim := override.Or(base)
	var notes []string
	if !recorded {
		notes = append(notes, fmt.Sprintf("the run was recorded without its limits (before agentos kept them): the tool root's defaults apply (%s)", JournalLimits(base)))
	}
	for _, f := range []struct {
		name      string
		now, then any
		set       bool
	}{
		{"timeout", lim.Timeout, base.Timeout, override.Timeout > 0},
		{"memory_bytes", lim.MemoryBytes, base.MemoryBytes, override.MemoryBytes > 0},
		{"max_call_depth", lim.MaxCallDepth, base.MaxCallDepth, override.MaxCallDepth > 0},
		{"max_output_bytes", lim.MaxOutputBytes, base.MaxOutputBytes, override.MaxOutputBytes > 0},
	} {
		if f.set && f.now != f.then {
			notes = append(notes, fmt.Sprintf("%s overridden: %v (the run's: %v)", f.name, f.now, f.then))
		}
	}
	return lim, strings.Join(notes, "; ")
}

// sameOutcome compares a result with a recorded run's: equal JSON results,
// or failures of the same kind.
func sameOutcome(meta journal.RunMeta, res execclient.Result) bool {
	if (meta.Status == journal.StatusOK) != res.Success {
		return false
	}
	if res.Success {
		return jsonEqual(meta.Result, res.Result)
	}
	var rec Error
	if json.Unmarshal(meta.Error, &rec) != nil {
		return false
	}
	return rec.Kind == res.Error.Kind && rec.Message == res.Error.Message
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// runPins returns the pins a recorded run runs again with: its recorded
// modules, loaded from j. A run recorded before agentos pinned modules
// has none (every require reads the tree).
func runPins(j *journal.Journal, meta journal.RunMeta) *Pins {
	return &Pins{Modules: meta.Modules, Source: j.Source}
}

// modulesNote says which modules a replay or resumed run did not take
// from the run's record ("" when every one was the recorded one).
func modulesNote(meta journal.RunMeta, fromTree []string, replaced map[string][]byte) string {
	var notes []string
	if len(fromTree) > 0 {
		if meta.Pinned {
			notes = append(notes, fmt.Sprintf("the run did not require %s: read from the tool tree as it is now", strings.Join(fromTree, ", ")))
		} else {
			notes = append(notes, fmt.Sprintf("the run was recorded before agentos pinned modules: %s read from the tool tree as it is now, which may differ from what ran", strings.Join(fromTree, ", ")))
		}
	}
	var swapped []string
	for _, m := range meta.Modules {
		if _, ok := replaced[m.Path]; ok {
			swapped = append(swapped, m.Path)
		}
	}
	if len(swapped) > 0 {
		notes = append(notes, fmt.Sprintf("replaced by the given source: %s", strings.Join(swapped, ", ")))
	}
	return strings.Join(notes, "; ")
}
