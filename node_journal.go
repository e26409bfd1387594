package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/clip"
	"github.com/agentos-run/agentos/journal"
)

// The node's journal endpoints. A serving node holds its journal's file
// lock for as long as it runs, so the CLI commands that read or write the
// journal (exec, runs, trace, replay, recover) go through the node when one
// serves the tool root, as 'agentos call' does:
//
//	GET  /v1/runs         every run ([]RunSummary), oldest first
//	GET  /v1/runs/{id}    one run (id or unique prefix) as a journal.Dump
//	POST /v1/exec         run a tool as 'agentos exec' does (ExecRequest → ExecReply)
//	POST /v1/recover      resume unfinished runs (RecoverRequest → NodeRecovery)

// RunSummary is one run as the node lists it: its metadata and how many
// driver calls it recorded.
type RunSummary struct {
	journal.RunMeta
	Calls int `json:"calls"`
}

// ExecRequest asks a serving node to run a tool as 'agentos exec' does:
// the operator's run (no caller restriction: only the socket's owner can
// ask), recorded in the node's journal.
type ExecRequest struct {
	// Path is the tool, relative to the tool root.
	Path string `json:"path"`
	// Args is the JSON object passed to the tool ({} when empty).
	Args json.RawMessage `json:"args,omitempty"`
	// Timeout overrides the run's wall-clock limit (0: the node's default).
	Timeout time.Duration `json:"timeout_ns,omitempty"`
}

// ExecReply is the node's answer to an ExecRequest: the run's result and
// its journal id, as 'agentos exec --json' prints them.
type ExecReply struct {
	executor.Result
	Run string `json:"run,omitempty"`
}

// RecoverRequest asks a serving node to resume unfinished runs: Run alone
// (an id or unique prefix, resumed in a worker process even when
// quarantined), or every unfinished tool run that is not in flight on the
// node (Run empty).
type RecoverRequest struct {
	Run string `json:"run,omitempty"`
	// Timeout, when positive, overrides each resumed run's recorded
	// timeout ('agentos recover --timeout').
	Timeout time.Duration `json:"timeout,omitempty"`
}

// NodeRecovery says what a serving node did about unfinished runs: what it
// resumed when it started, and what this request resumed.
type NodeRecovery struct {
	// PID is the node's process id.
	PID int `json:"pid"`
	// AtStart is what the node did when it started (Runtime.Recovered).
	AtStart []RecoverReport `json:"at_start"`
	// Now is what this request did.
	Now []RecoverReport `json:"recovered"` // the same key as recover --json without a node
}

// recovering serializes the recover requests of the nodes in this process:
// two of them must never resume one run twice.
var recovering sync.Mutex

// journalRoutes adds the journal endpoints to mux. ctx is the Serve
// context: when it ends, the tool runs the node started for a request are
// cancelled and stay resumable, as the node's own runs are.
func (rt *Runtime) journalRoutes(ctx context.Context, mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/runs", func(w http.ResponseWriter, _ *http.Request) {
		runs, err := rt.j.Runs()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": clip.Text(err.Error())})
			return
		}
		out := make([]RunSummary, 0, len(runs))
		for _, m := range runs {
			n, err := rt.j.Count(m.ID)
			if err != nil {
				writeJSON(w, http.StatusInternalServerError, map[string]string{"error": clip.Text(err.Error())})
				return
			}
			out = append(out, RunSummary{RunMeta: m, Calls: n})
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		d, err := rt.j.Export(r.PathValue("id"))
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
				code = http.StatusNotFound
			}
			writeJSON(w, code, map[string]string{"error": clip.Text(err.Error())})
			return
		}
		writeJSON(w, http.StatusOK, d)
	})
	mux.HandleFunc("POST /v1/exec", func(w http.ResponseWriter, r *http.Request) {
		var req ExecRequest
		if !rt.readRequest(w, r, &req) {
			return
		}
		if req.Path == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "agentos: the exec request names no tool path"})
			return
		}
		// The caller hanging up or the node stopping cancels the run: it
		// stays "running", resumable, as an interrupted 'agentos exec' does.
		runCtx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		res, id, err := Exec(runCtx, rt.ex, rt.j, executor.Request{Path: req.Path, Args: req.Args, Limits: executor.Limits{Timeout: req.Timeout}})
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": clip.N(err.Error(), 4096)})
			return
		}
		writeJSON(w, http.StatusOK, ExecReply{Result: res, Run: id})
	})
	mux.HandleFunc("POST /v1/recover", func(w http.ResponseWriter, r *http.Request) {
		var req RecoverRequest
		if !rt.readRequest(w, r, &req) {
			return
		}
		runCtx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		out, code, err := rt.recoverOnNode(runCtx, req.Run, RecoverOptions{Limits: executor.Limits{Timeout: req.Timeout}})
		if err != nil {
			writeJSON(w, code, map[string]string{"error": clip.N(err.Error(), 4096)})
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// inFlight reports whether run m is being executed by this process now: it
// is running, this process hosts it, and its host did not interrupt it.
func inFlight(m journal.RunMeta) bool {
	return m.Status == journal.StatusRunning && m.Current() && m.Interrupted == ""
}

// recoverOnNode resumes run id (or, with id empty, every unfinished tool
// run not in flight here) on the serving node, as 'agentos recover' does
// without a node. It never resumes a run the node is executing.
func (rt *Runtime) recoverOnNode(ctx context.Context, id string, ropts RecoverOptions) (NodeRecovery, int, error) {
	recovering.Lock()
	defer recovering.Unlock()
	out := NodeRecovery{PID: os.Getpid(), AtStart: rt.Recovered(), Now: []RecoverReport{}}
	if out.AtStart == nil {
		out.AtStart = []RecoverReport{}
	}
	if id == "" {
		reps, err := RecoverWith(ctx, rt.ex, rt.j, RecoverOptions{Limits: ropts.Limits, skip: inFlight})
		if err != nil {
			return out, http.StatusUnprocessableEntity, err
		}
		if reps != nil {
			out.Now = reps
		}
		return out, http.StatusOK, nil
	}
	meta, err := rt.j.Get(id)
	if err != nil {
		return out, http.StatusNotFound, err
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
	rep, err := RecoverRunWith(ctx, ex, rt.j, meta.ID, ropts)
	if err != nil {
		return out, http.StatusUnprocessableEntity, err
	}
	out.Now = []RecoverReport{rep}
	return out, http.StatusOK, nil
}

// readRequest decodes a JSON request body of at most the node's argument
// limit (plus room for the request's other fields) into v; on failure it
// answers (413 for a body over the limit, naming it) and returns false.
func (rt *Runtime) readRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	limit := rt.cfg.MaxArgs() + 64<<10
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("agentos: the request is over the node's limit of %d bytes of arguments: send less, or raise limits.max_args_bytes in agentos.json and restart the node", rt.cfg.MaxArgs())})
			return false
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": clip.Text(err.Error())})
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "agentos: the request is not the JSON object expected: " + clip.Text(err.Error())})
		return false
	}
	return true
}

// Runs lists the runs of the node's journal, oldest first.
func (c *NodeClient) Runs(ctx context.Context) ([]RunSummary, error) {
	var out []RunSummary
	return out, c.do(ctx, "GET", "/v1/runs", nil, &out)
}

// Run returns one run of the node's journal (id or a unique prefix).
func (c *NodeClient) Run(ctx context.Context, id string) (journal.Dump, error) {
	var out journal.Dump
	return out, c.do(ctx, "GET", "/v1/runs/"+url.PathEscape(id), nil, &out)
}

// Exec runs a tool on the node as 'agentos exec' does, recorded in the
// node's journal.
func (c *NodeClient) Exec(ctx context.Context, req ExecRequest) (ExecReply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return ExecReply{}, err
	}
	var out ExecReply
	return out, c.do(ctx, "POST", "/v1/exec", body, &out)
}

// Recover asks the node to resume unfinished runs (see RecoverRequest).
func (c *NodeClient) Recover(ctx context.Context, req RecoverRequest) (NodeRecovery, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return NodeRecovery{}, err
	}
	var out NodeRecovery
	return out, c.do(ctx, "POST", "/v1/recover", body, &out)
}
