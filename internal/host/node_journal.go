package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/journal"
)

// The journal endpoints of the node's admin socket (package admin): a
// serving node holds its journal's file lock for as long as it runs, so the
// CLI commands that read or write the journal (exec, runs, trace, replay,
// recover) go through the node when one serves the tool root, as 'agentos
// call' does. Here is what the runtime answers them with.

// NodeRecovery says what a serving node did about unfinished runs: what it
// resumed when it started, and what this request resumed.
type NodeRecovery struct {
	// PID is the node's process id.
	PID int `json:"pid"`
	// AtStart is what the node did when it started (Runtime.Recovered).
	AtStart []executor.RecoverReport `json:"at_start"`
	// Now is what this request did.
	Now []executor.RecoverReport `json:"recovered"` // the same key as recover --json without a node
	// Forges are the interrupted forges this request resumed.
	Forges []ForgeReport `json:"forges"`
	// Left are the interrupted runs of other kinds, left with the reason.
	Left []LeftRun `json:"left"`
}

// recovering serializes the recover requests of the nodes in this process:
// two of them must never resume one run twice.
var recovering sync.Mutex

func (b adminBackend) Exec(ctx context.Context, req admin.ExecRequest) (admin.ExecReply, error) {
	res, id, err := executor.Record(ctx, b.rt.ex, b.rt.j, executor.Request{Path: req.Path, Args: req.Args, Limits: executor.Limits{Timeout: req.Timeout}})
	if err != nil {
		return admin.ExecReply{}, err
	}
	return admin.ExecReply{Result: res, Run: id}, nil
}

func (b adminBackend) Recover(ctx context.Context, req admin.RecoverRequest) (any, error) {
	out, code, err := b.rt.recoverOnNode(ctx, req.Run, executor.RecoverOptions{Limits: executor.Limits{Timeout: req.Timeout}})
	if err != nil {
		return nil, &admin.StatusError{Code: code, Err: err}
	}
	return out, nil
}

// inFlight reports whether run m is being executed by this process now: it
// is running, this process hosts it, and its host did not interrupt it.
func inFlight(m journal.RunMeta) bool {
	return m.Status == journal.StatusRunning && m.Current() && m.Interrupted == ""
}

// recoverOnNode resumes run id (or, with id empty, every unfinished tool
// run not in flight here) on the serving node, as 'agentos recover' does
// without a node. It never resumes a run the node is executing.
func (rt *Runtime) recoverOnNode(ctx context.Context, id string, ropts executor.RecoverOptions) (NodeRecovery, int, error) {
	recovering.Lock()
	defer recovering.Unlock()
	out := NodeRecovery{PID: os.Getpid(), AtStart: rt.Recovered(), Now: []executor.RecoverReport{}, Forges: []ForgeReport{}, Left: []LeftRun{}}
	if out.AtStart == nil {
		out.AtStart = []executor.RecoverReport{}
	}
	if id == "" {
		reps, err := executor.RecoverWith(ctx, rt.ex, rt.j, executor.RecoverOptions{Limits: ropts.Limits, Skip: inFlight})
		if err != nil {
			return out, http.StatusUnprocessableEntity, err
		}
		if reps != nil {
			out.Now = reps
		}
		if out.Forges, err = rt.RecoverForges(ctx, ""); err != nil {
			return out, http.StatusUnprocessableEntity, err
		}
		if _, _, left, err := InterruptedRuns(rt.j); err != nil {
			return out, http.StatusInternalServerError, err
		} else if left != nil {
			out.Left = left
		}
		return out, http.StatusOK, nil
	}
	meta, err := rt.j.Get(id)
	if err != nil {
		return out, http.StatusNotFound, err
	}
	if meta.Kind == forge.Kind {
		if out.Forges, err = rt.RecoverForges(ctx, meta.ID); err != nil {
			return out, http.StatusUnprocessableEntity, err
		}
		return out, http.StatusOK, nil
	}
	if inFlight(meta) {
		return out, http.StatusConflict, fmt.Errorf("agentos: run %s is in flight on the serving node (pid %d): it is not unfinished; 'agentos runs' shows when it ends", meta.ID, os.Getpid())
	}
	// As 'agentos recover --run' does: one run, always in a worker process.
	ex := rt.ex
	if ex.Options().Isolation != executor.IsolationProcess {
		opts := ex.Options()
		opts.Isolation = executor.IsolationProcess
		if ex, err = executor.New(opts); err != nil {
			return out, http.StatusInternalServerError, err
		}
		defer ex.Close()
	}
	rep, err := executor.RecoverRunWith(ctx, ex, rt.j, meta.ID, ropts)
	if err != nil {
		return out, http.StatusUnprocessableEntity, err
	}
	out.Now = []executor.RecoverReport{rep}
	return out, http.StatusOK, nil
}

// Approvals implements admin.ApprovalBackend.
func (b adminBackend) Approvals(state string) (any, error) {
	rs, err := b.rt.Approvals(approval.State(state))
	if rs == nil {
		rs = []approval.Request{}
	}
	return rs, err
}

// Decide implements admin.ApprovalBackend.
func (b adminBackend) Decide(req admin.ApproveRequest) (any, error) {
	opts := ApproveOptions{By: req.By, Reason: req.Reason}
	if opts.By == "" {
		opts.By = "admin socket"
	}
	var (
		r   approval.Request
		err error
	)
	if req.Deny {
		r, err = b.rt.Deny(req.Target, opts)
	} else {
		r, err = b.rt.Approve(req.Target, opts)
	}
	if errors.Is(err, approval.ErrNotFound) || errors.Is(err, approval.ErrAmbiguous) || errors.Is(err, os.ErrNotExist) {
		return nil, &admin.StatusError{Code: http.StatusNotFound, Err: err}
	}
	return r, err
}
