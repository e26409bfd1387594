package tournament

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/persona"
)

// calls are how a tournament's calls are made: live, resumed or replayed.
type calls struct {
	// model makes the model calls, journaled.
	model driver.Host
	// scores journals the tool scores (persona.Options.Journal) in the
	// same run (nil: unrecorded).
	scores driver.Middleware
	// paid are the Seqs whose answers an earlier attempt of a resumed
	// tournament got, and was charged for.
	paid map[uint64]bool
	// replay: every answer is the journal's, nothing is charged.
	replay bool
}

// run runs the tournament in a child process of the default process, with
// its calls made as c says; run (nil on a replay) is ended with the
// report. A winner is saved (unless a dry run) before the run ends, so
// that a crash in between resumes to the same save.
func (r *Runner) run(ctx context.Context, id string, run *journal.Run, a args, c calls) (Report, error) {
	out := Report{Run: id, Replayed: c.replay}
	grants := []capability.Grant{{Right: capability.LLM}}
	for _, s := range scoringTools(a.Tasks) {
		grants = append(grants, capability.Grant{Right: capability.Exec, Scope: s}, capability.Grant{Right: capability.Read, Scope: s})
	}
	quota, err := r.Config.Quota.Limits(quotaKey)
	if err != nil {
		return out, err
	}
	rep, runErr, err := r.play(ctx, id, a, c, grants, quota)
	if err != nil {
		err = fmt.Errorf("agentos: starting the tournament's process: %w", err)
		if run != nil {
			res, _ := json.Marshal(out)
			_ = run.End(journal.StatusFailed, res, nil)
		}
		return out, err
	}
	out.Report = rep
	if runErr == nil && rep.Improved && !a.DryRun {
		runErr = r.saveWinner(ctx, a, &out)
	}
	if run == nil {
		return out, runErr
	}
	return out, end(ctx, run, out, runErr)
}

// play runs persona.Tournament in the tournament's process and waits for
// the process to end: err is the spawn's, runErr the tournament's (or the
// process's abnormal end).
func (r *Runner) play(ctx context.Context, id string, a args, c calls, grants []capability.Grant, quota capability.Limits) (rep persona.Report, runErr, err error) {
	callerCtx := ctx
	finished := make(chan struct{}) // closed when the body has returned: rep is then complete
	wait, err := r.Spawn(func(ctx context.Context, p Process) error {
		defer close(finished)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(callerCtx, cancel)
		defer stop()
		rep, runErr = persona.Tournament(ctx, persona.Options{
			LLM: c.model, Journal: c.scores, Base: a.Base, Tasks: a.Tasks, Variants: a.Variants, Weights: a.Weights, Margin: a.Margin, MaxTokens: a.MaxTokens,
			ScoreTool: scoreTool(p),
			Charge:    charge(p, c),
			Walls:     func() (map[uint64]time.Duration, error) { return r.walls(id) },
		})
		return runErr
	}, Image, grants, quota)
	if err != nil {
		return rep, nil, err
	}
	<-finished // the body has returned: rep and runErr are complete
	if ended := wait(); runErr == nil && ended != nil {
		runErr = ended
	}
	return rep, runErr, nil
}

// scoreTool scores with a tool run by exec_tool as the process p.
func scoreTool(p Process) func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		call, _ := json.Marshal(map[string]any{"path": tool, "args": args})
		out, err := p.Call(ctx, "exec_tool", call)
		if err != nil {
			return nil, err
		}
		var r struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, err
		}
		if !r.Success {
			msg := "it failed"
			if r.Error != nil {
				msg = r.Error.Message
			}
			return nil, errors.New(msg)
		}
		return r.Result, nil
	}
}

// charge charges a model call's usage to the process p: nothing on a
// replay, p's own account only for a call an earlier attempt paid.
func charge(p Process, c calls) func(seq uint64, u llm.Usage) error {
	return func(seq uint64, u llm.Usage) error {
		if c.replay {
			return nil // nothing is spent on a replay
		}
		if c.paid[seq] {
			// Paid by the attempt that got it, whose account (and every
			// ancestor's) was charged then: counted on this process's own
			// account only, so that its quota covers the whole tournament.
			acct := p.Account()
			acct.Carry(capability.Limits{capability.LLMTokens: acct.Used(capability.LLMTokens) + float64(u.TotalTokens), capability.CostUSD: acct.Used(capability.CostUSD) + u.CostUSD})
			return nil
		}
		if err := p.Charge(capability.LLMTokens, float64(u.TotalTokens)); err != nil {
			return err
		}
		return p.Charge(capability.CostUSD, u.CostUSD)
	}
}

// walls are run id's recorded calls' wall times, by Seq.
func (r *Runner) walls(id string) (map[uint64]time.Duration, error) {
	entries, err := r.Journal.Entries(id)
	if err != nil {
		return nil, err
	}
	walls := make(map[uint64]time.Duration, len(entries))
	for _, e := range entries {
		walls[e.Seq] = e.Duration
	}
	return walls, nil
}

// saveWinner saves the winner as the base persona's new version, recorded
// approved, into out.Saved.
func (r *Runner) saveWinner(ctx context.Context, a args, out *Report) error {
	w := out.WinnerCandidate()
	saved, err := r.Personas.Save(ctx, persona.Persona{
		Name: a.Base.Name, Description: a.Base.Description, NoProtocol: a.Base.NoProtocol, System: w.System,
		Parent: a.Base.Version, Origin: "tournament " + out.Run,
	})
	if err == nil {
		err = r.Saved(saved, saved.Origin)
	}
	if err != nil {
		return fmt.Errorf("agentos: saving the winner %s as persona %q: %w", w.Label, a.Base.Name, err)
	}
	out.Saved = &saved
	return nil
}

// end ends run with out: a cancelled tournament, or one whose model
// failed, is left running, to be resumed (the failed call is asked again).
func end(ctx context.Context, run *journal.Run, out Report, runErr error) error {
	if runErr != nil && (ctx.Err() != nil || errors.Is(runErr, persona.ErrModel)) {
		_ = run.Interrupt(runErr.Error())
		return runErr
	}
	status := journal.StatusOK
	if runErr != nil {
		status = journal.StatusFailed
	}
	res, _ := json.Marshal(out)
	if err := run.End(status, res, nil); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}
