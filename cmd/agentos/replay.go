package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// runReplay re-executes a run offline:
// agentos replay [--root DIR] [--json] [--tool PATCHED.ts] [--timeout D] [--attempts N] RUN
// (a forge run replays its loop: replayForge).
//
// The run replays under the limits it was recorded with; --timeout
// overrides the recorded timeout. A replay stopped by a limit says so (it
// is not a divergence).
func runReplay(ctx context.Context, args []string, stdout, _ io.Writer) error {
	c := newJournalCmd("replay", "print one JSON object {run, result, patched, same, divergence} (a forge: {run, recorded, result, same, divergence})")
	tool := c.fs.String("tool", "", "a patched version of the tool to feed the recorded I/O")
	timeout := durationFlag(c.fs, "timeout", "wall-clock limit `D` of the replay, e.g. 90s or 90 (seconds); it MUST be positive (default: the one recorded with the run)")
	attempts := c.fs.Int("attempts", 0, "a forge run only: replay its loop with at most `N` attempts (default: llm.forge_attempts)")
	pos, absRoot, cfg, j, err := c.openRun(ctx, args, "one RUN id (or a unique prefix)") // from the node when one serves the root
	if err != nil {
		return err
	}
	defer j.Close()
	asJSON := c.asJSON
	meta, gerr := j.Get(pos[0])
	if gerr == nil && meta.Kind == host.TournamentKind {
		return usagef("run %s is a tournament: replay it with 'agentos tournament --replay %s'", meta.ID, meta.ID)
	}
	if gerr == nil && meta.Kind == forge.Kind {
		if *tool != "" || *timeout != 0 {
			return usagef("run %s is a forge: --tool and --timeout replay a tool run; a forge replays with today's prompt and checker (--attempts N to try another bound)", meta.ID)
		}
		return replayForge(ctx, absRoot, cfg, j, meta.ID, *attempts, *asJSON, stdout)
	}
	if *attempts != 0 {
		return usagef("--attempts replays a forge run; run %s is not one", pos[0])
	}
	return replayToolRun(ctx, absRoot, cfg, j, pos[0], *tool, *timeout, *asJSON, stdout)
}

// replayToolRun replays tool run id offline, with the tool as recorded or
// patched (the file tool, when given), under the recorded limits or the
// timeout given.
func replayToolRun(ctx context.Context, absRoot string, cfg host.Config, j *journal.Journal, id, tool string, timeout time.Duration, asJSON bool, stdout io.Writer) error {
	var patched []byte
	if tool != "" {
		var err error
		if patched, err = os.ReadFile(tool); err != nil {
			return usagef("cannot read the patched tool: %v", err)
		}
	}
	ex, stop, err := toolExecutor(absRoot, cfg, func(opts *executor.Options) { opts.Workers = 1 })
	if err != nil {
		return err
	}
	defer stop()
	rep, err := executor.ReplayWith(ctx, ex, j, id, execclient.ReplayOptions{Patched: patched, Limits: executor.Limits{Timeout: timeout}})
	if err != nil {
		return usagef("%v", err)
	}
	if asJSON {
		if err := fprintJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printReplay(stdout, rep)
	}
	if replayFailed(rep) {
		return errFailed
	}
	return nil
}

// replayFailed reports whether a replay fails the command: it diverged,
// the recorded tool gave another result, or a limit stopped it before the
// run's end with another result. A patched tool that followed the I/O to
// a different result does not fail: that is what a patch is for.
func replayFailed(rep executor.ReplayReport) bool {
	return rep.Divergence != nil || (!rep.Patched && !rep.Same) || (rep.LimitHit != "" && !rep.Same)
}

// recordedTimeout is the timeout run rep replayed was recorded under.
func recordedTimeout(rep executor.ReplayReport) string {
	if rep.Run.Limits == nil {
		return "limits it did not record (it predates recorded limits)"
	}
	return "a timeout of " + rep.Run.Limits.Timeout.String()
}

func printReplay(w io.Writer, rep executor.ReplayReport) {
	what := "the recorded tool"
	if rep.Patched {
		what = "the patched tool"
	}
	fmt.Fprintf(w, "replayed run %s (%s) offline with %s\n", rep.Run.ID, rep.Run.Tool, what)
	recorded := string(rep.Run.Result)
	if rep.Run.Status != "ok" {
		recorded = "failed: " + string(rep.Run.Error)
	}
	fmt.Fprintf(w, "  recorded  %s\n", clip(recorded, 400))
	if rep.Result.Success {
		fmt.Fprintf(w, "  replayed  %s\n", clip(string(rep.Result.Result), 400))
	} else {
		fmt.Fprintf(w, "  replayed  failed: %s: %s\n", rep.Result.Error.Kind, clip(rep.Result.Error.Message, 300))
	}
	if rep.LimitsNote != "" {
		fmt.Fprintf(w, "  limits    %s\n", rep.LimitsNote)
	}
	if len(rep.Modules) > 0 {
		fmt.Fprintf(w, "  modules   %s (the recorded versions, from the journal)\n", modulesCell(rep.Run))
	}
	if rep.ModulesNote != "" {
		fmt.Fprintf(w, "  modules   %s\n", rep.ModulesNote)
	}
	printReplayVerdict(w, rep)
}

// printReplayVerdict says how the replay ended: diverged, stopped by a
// limit, or the same or another result than recorded.
func printReplayVerdict(w io.Writer, rep executor.ReplayReport) {
	if d := rep.Divergence; d != nil {
		fmt.Fprintf(w, "DIVERGED %s\n", d.Error())
		return
	}
	if rep.LimitHit != "" && !rep.Same {
		hint := ""
		if strings.HasPrefix(rep.LimitHit, "timeout ") {
			hint = fmt.Sprintf("; the run was recorded under %s: raise it with --timeout", recordedTimeout(rep))
		}
		fmt.Fprintf(w, "LIMIT the replay stopped at its limit (%s) before the run's end: this is not a divergence%s\n", rep.LimitHit, hint)
		return
	}
	switch {
	case rep.Same:
		fmt.Fprintln(w, "same result as recorded")
	case rep.Patched:
		fmt.Fprintln(w, "the patched tool followed the recorded I/O exactly and gave a different result")
	default:
		fmt.Fprintln(w, "the result differs from the recorded one")
	}
}

// replayForge replays forge run id offline (forge.Replay): today's prompt
// and checker (the root's allowed_imports), the recorded model answers and
// test results, attempts at most (0: llm.forge_attempts).
func replayForge(ctx context.Context, absRoot string, cfg host.Config, j *journal.Journal, id string, attempts int, asJSON bool, stdout io.Writer) error {
	if attempts < 0 {
		return usagef("--attempts %d: it MUST be positive", attempts)
	}
	opts, closePII, err := cfg.ForgeReplayOptions(absRoot)
	if err != nil {
		return err
	}
	defer closePII()
	if attempts > 0 {
		opts.MaxAttempts = attempts
	}
	opts.Logger = cmdLogger(ctx)
	rep, err := forge.Replay(ctx, j, id, opts)
	if err != nil {
		return usagef("%v", err)
	}
	if asJSON {
		if err := fprintJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printForgeReplay(stdout, rep)
	}
	if !rep.Same {
		return errFailed
	}
	return nil
}

func printForgeReplay(w io.Writer, rep forge.ReplayReport) {
	spec, _ := forgerun.SpecOf(rep.Run)
	fmt.Fprintf(w, "replayed forge run %s offline (%q) with today's prompt and checker: no model request, no test run\n", rep.Run.ID, clip(spec, 120))
	fmt.Fprintf(w, "  recorded  %s\n", forgeOutcome(rep.Recorded, rep.RecordedError))
	fmt.Fprintf(w, "  replayed  %s\n", forgeOutcome(rep.Result, rep.Error))
	for _, a := range rep.Result.Attempts {
		if a.Passed {
			fmt.Fprintf(w, "  attempt %d passed (%s)\n", a.N, a.Path)
		} else {
			fmt.Fprintf(w, "  attempt %d failed: %s\n", a.N, clip(strings.Join(a.Errors, "; "), 300))
		}
	}
	switch {
	case rep.Divergence != nil:
		fmt.Fprintf(w, "DIVERGED %s\n", rep.Divergence.Error())
	case rep.Same:
		fmt.Fprintln(w, "same result as recorded")
	default:
		fmt.Fprintln(w, "the loop followed the recorded calls and ended otherwise than recorded")
	}
}

// forgeOutcome is one line for a forge's result: the tool kept, or the
// error, and its attempts.
func forgeOutcome(r forge.Result, errMsg string) string {
	passed := 0
	for _, a := range r.Attempts {
		if a.Passed {
			passed++
		}
	}
	counts := fmt.Sprintf("%d attempts: %d passed, %d failed", len(r.Attempts), passed, len(r.Attempts)-passed)
	if errMsg != "" {
		return fmt.Sprintf("failed after %s: %s", counts, clip(errMsg, 300))
	}
	return fmt.Sprintf("kept %s after %s", r.Path, counts)
}
