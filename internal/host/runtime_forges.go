package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/journal"
)

// LeftRun is an interrupted run that recovery lists and leaves alone: a run
// of a kind agentos recover does not resume (an agent's, a tournament's),
// with why and what to do.
type LeftRun struct {
	Run    journal.RunMeta `json:"run"`
	Reason string          `json:"reason"`
}

// InterruptedRuns sorts the runs 'agentos runs' shows interrupted (or
// quarantined) by what recovery does with them: tool runs (the executor
// resumes them: RecoverWith), forges (RecoverForges) and the rest, left
// with the reason. IMPORTANT: a run 'agentos runs' calls interrupted is
// always in one of the three lists: recovery never says "no unfinished
// runs" while one is listed.
func InterruptedRuns(j *journal.Journal) (execs, forges []journal.RunMeta, left []LeftRun, err error) {
	runs, err := j.Runs()
	if err != nil {
		return nil, nil, nil, err
	}
	for _, m := range runs {
		if s := m.Shown(); s != journal.StatusInterrupted && s != journal.StatusQuarantined {
			continue
		}
		switch m.Kind {
		case "exec":
			execs = append(execs, m)
		case forge.Kind:
			forges = append(forges, m)
		default:
			left = append(left, LeftRun{Run: m, Reason: leftReason(m)})
		}
	}
	return execs, forges, left, nil
}

// leftReason says why recovery leaves run m alone and what resumes it.
func leftReason(m journal.RunMeta) string {
	if m.Kind == agent.Kind {
		return "an agent's run resumes only from its snapshot ('agentos snapshot' then 'agentos restore'), or when its supervisor restarts it; recover leaves it"
	}
	return fmt.Sprintf("a %s run is not resumed by recover (only tool runs and forges are); it stays as it is", m.Kind)
}

// RecoverForges resumes, now and one after the other, the interrupted
// forges (with id set, that one forge run, an id or unique prefix) as the
// default process, and reports what became of each: their recorded model
// answers are replayed (no request is sent twice), then each goes on live
// with the configured model. A forge this runtime resumes already
// (Config.ResumeForges) or runs now is left alone. Each resumption is
// logged when it starts.
//
// IMPORTANT: this sends model requests (they may be paid): only a command
// asked to recover ('agentos recover') calls it.
func (rt *Runtime) RecoverForges(ctx context.Context, id string) ([]ForgeReport, error) {
	var ids []string
	if id != "" {
		meta, err := rt.j.Get(id)
		if err != nil {
			return nil, err
		}
		switch {
		case meta.Kind != forge.Kind:
			return nil, fmt.Errorf("%w: run %s is of kind %s, not a forge", executor.ErrNotResumable, meta.ID, meta.Kind)
		case meta.Shown() != journal.StatusInterrupted:
			return nil, fmt.Errorf("%w: forge run %s is %s, not interrupted; replay it with 'agentos replay %s'", executor.ErrNotResumable, meta.ID, meta.Shown(), meta.ID)
		case slices.Contains(rt.resuming, meta.ID):
			return nil, fmt.Errorf("%w: forge run %s is being resumed by this node already", executor.ErrNotResumable, meta.ID)
		}
		ids = []string{meta.ID}
	} else {
		_, forges, _, err := InterruptedRuns(rt.j)
		if err != nil {
			return nil, err
		}
		for _, m := range forges {
			if !slices.Contains(rt.resuming, m.ID) && !inFlight(m) {
				ids = append(ids, m.ID)
			}
		}
	}
	out := []ForgeReport{}
	for _, id := range ids {
		rt.log.Info("agentos: resuming interrupted forge", slog.String("run", id))
		res, err := rt.node.ResumeForge(ctx, rt.agent, id)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return out, err
		}
		out = append(out, ForgeReport{Run: id, Result: res, Err: errString(err)})
	}
	return out, nil
}
