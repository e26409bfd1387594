package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/internal/clip"
	"github.com/agentos-run/agentos/journal"
)

// errorLimit is how much of an error's text an answer quotes.
const errorLimit = 4096

// handlers answers the endpoints, one method each (see the package
// documentation for the protocol). IMPORTANT: every failure is answered
// through fail, the one way to write an error.
type handlers struct {
	// ctx is Serve's context: when it ends, the tool runs started for a
	// request are cancelled and stay resumable, as the node's own runs are.
	ctx context.Context
	b   Backend
}

// route is one endpoint: its pattern (method and path) and its handler.
type route struct {
	pattern string
	handle  http.HandlerFunc
}

// routes are the endpoints every Backend answers.
func (h *handlers) routes() []route {
	return []route{
		{"GET /v1/cluster/ps", h.onClusterPS},
		{"GET /v1/cluster/events", h.onClusterEvents},
		{"GET /v1/ps", h.onPS},
		{"GET /v1/events", h.onEvents},
		{"POST /v1/signal", h.onSignal},
		{"POST /v1/snapshot", h.onSnapshot},
		{"POST /v1/restore", h.onRestore},
		{"POST /v1/call/{tool}", h.onCall},
		{"GET /v1/runs", h.onRuns},
		{"GET /v1/runs/{id}", h.onRun},
		{"POST /v1/exec", h.onExec},
		{"GET /v1/cluster", h.onCluster},
		{"POST /v1/recover", h.onRecover},
		{"POST /v1/memory", h.onMemory},
	}
}

// mux routes the endpoints: those of every Backend, those of the optional
// interfaces it implements (ApprovalBackend, RevokeBackend), and the
// handlers it hands out (/metrics, /mcp).
func mux(ctx context.Context, b Backend) *http.ServeMux {
	h := &handlers{ctx: ctx, b: b}
	rs := h.routes()
	if ab, ok := b.(ApprovalBackend); ok {
		rs = append(rs, route{"GET /v1/approvals", approvals(ab)}, route{"POST /v1/approve", h.approve(ab)})
	}
	if rb, ok := b.(RevokeBackend); ok {
		rs = append(rs, route{"POST /v1/revoke", h.revoke(rb)})
	}
	m := http.NewServeMux()
	for _, r := range rs {
		m.HandleFunc(r.pattern, r.handle)
	}
	if mh := b.Metrics(); mh != nil {
		m.Handle("GET /metrics", mh)
	}
	if mh := b.MCP(); mh != nil {
		m.Handle("/mcp", mh)
	}
	return m
}

// fail answers an error: {"error": its text, clipped}, with the status its
// *StatusError chooses, else code.
func fail(w http.ResponseWriter, code int, err error) {
	var se *StatusError
	if errors.As(err, &se) {
		code = se.Code
	}
	writeJSON(w, code, map[string]string{"error": clip.N(err.Error(), errorLimit)})
}

// reply answers out (200), or err with code (see fail).
func reply(w http.ResponseWriter, out any, code int, err error) {
	if err != nil {
		fail(w, code, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// untilServeEnds returns a context of r's that also ends when Serve's does:
// the caller hanging up or the node stopping cancels the run, which stays
// "running", resumable, as an interrupted 'agentos exec' does.
func (h *handlers) untilServeEnds(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(h.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (h *handlers) onClusterPS(w http.ResponseWriter, r *http.Request) {
	fanOut(w, r, h.b, func(ctx context.Context, k kernelclient.Client) (any, error) { return k.PS(ctx) })
}

func (h *handlers) onClusterEvents(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	fanOut(w, r, h.b, func(ctx context.Context, k kernelclient.Client) (any, error) { return k.Events(ctx, 0, limit) })
}

func (h *handlers) onPS(w http.ResponseWriter, r *http.Request) {
	ps, err := h.b.Kernel().PS(r.Context())
	reply(w, ps, http.StatusInternalServerError, err)
}

func (h *handlers) onEvents(w http.ResponseWriter, r *http.Request) {
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	evs, err := h.b.Kernel().Events(r.Context(), after, limit)
	reply(w, evs, http.StatusInternalServerError, err)
}

func (h *handlers) onSignal(w http.ResponseWriter, r *http.Request) {
	var req SignalRequest
	if !readRequest(w, r, h.b.MaxArgs(), &req) {
		return
	}
	if req.By == "" {
		req.By = "admin socket"
	}
	err := h.b.Kernel().Signal(r.Context(), kernelclient.PID(req.PID), req.Signal, req.By)
	reply(w, struct{}{}, kernelStatus(err), err)
}

func (h *handlers) onSnapshot(w http.ResponseWriter, r *http.Request) {
	var req SnapshotRequest
	if !readRequest(w, r, h.b.MaxArgs(), &req) {
		return
	}
	if req.Process == "" {
		fail(w, http.StatusBadRequest, fmt.Errorf("%w: snapshot names no process: give its PID or name (agentos ps lists them)", kernelclient.ErrInvalid))
		return
	}
	by := cmpOr(req.By, "agentos snapshot --kill")
	info, err := h.b.Kernel().Snapshot(r.Context(), req.Process, req.Kill, by)
	reply(w, info, kernelStatus(err), err)
}

func (h *handlers) onRestore(w http.ResponseWriter, r *http.Request) {
	var req RestoreRequest
	if !readRequest(w, r, h.b.MaxArgs(), &req) {
		return
	}
	if req.Snapshot == "" {
		fail(w, http.StatusBadRequest, fmt.Errorf("%w: restore names no snapshot: give the id agentos snapshot printed (agentos runs lists them, kind snapshot)", kernelclient.ErrInvalid))
		return
	}
	restore := h.b.Kernel().Restore
	if req.Fork {
		restore = h.b.Kernel().Fork
	}
	pid, name, err := restore(r.Context(), req.Snapshot, req.Name)
	reply(w, RestoreReply{PID: uint64(pid), Name: name}, kernelStatus(err), err)
}

func (h *handlers) onCall(w http.ResponseWriter, r *http.Request) {
	args, ok := readBody(w, r, h.b.MaxArgs(), 0)
	if !ok {
		return
	}
	out, err := h.b.Call(r.Context(), r.PathValue("tool"), args)
	if err != nil {
		fail(w, http.StatusUnprocessableEntity, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (h *handlers) onRuns(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query()
	q := journal.RunQuery{Oldest: p.Get("oldest") == "true", Before: p.Get("before"), After: p.Get("after")}
	if l := p.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			fail(w, http.StatusBadRequest, fmt.Errorf("limit %q is not a number", l))
			return
		}
		q.Limit = n
	}
	runs, err := h.b.Runs(q)
	if runs == nil {
		runs = []RunSummary{}
	}
	code := http.StatusInternalServerError
	if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
		code = http.StatusNotFound
	}
	reply(w, runs, code, err)
}

func (h *handlers) onRun(w http.ResponseWriter, r *http.Request) {
	d, err := h.b.Run(r.PathValue("id"))
	code := http.StatusInternalServerError
	if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
		code = http.StatusNotFound
	}
	reply(w, d, code, err)
}

func (h *handlers) onExec(w http.ResponseWriter, r *http.Request) {
	var req ExecRequest
	if !readRequest(w, r, h.b.MaxArgs(), &req) {
		return
	}
	if req.Path == "" {
		fail(w, http.StatusBadRequest, errors.New("agentos: the exec request names no tool path"))
		return
	}
	ctx, cancel := h.untilServeEnds(r)
	defer cancel()
	rep, err := h.b.Exec(ctx, req)
	reply(w, rep, http.StatusUnprocessableEntity, err)
}

func (h *handlers) onCluster(w http.ResponseWriter, r *http.Request) {
	out, err := h.b.Cluster(r.Context())
	reply(w, out, http.StatusInternalServerError, err)
}

func (h *handlers) onRecover(w http.ResponseWriter, r *http.Request) {
	var req RecoverRequest
	if !readRequest(w, r, h.b.MaxArgs(), &req) {
		return
	}
	ctx, cancel := h.untilServeEnds(r)
	defer cancel()
	out, err := h.b.Recover(ctx, req)
	reply(w, out, http.StatusUnprocessableEntity, err)
}

func (h *handlers) onMemory(w http.ResponseWriter, r *http.Request) {
	var req MemoryRequest
	if !readRequest(w, r, h.b.MaxArgs(), &req) {
		return
	}
	out, err := h.b.Memory(r.Context(), req)
	reply(w, out, http.StatusUnprocessableEntity, err)
}

// approvals answers GET /v1/approvals.
func approvals(ab ApprovalBackend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, err := ab.Approvals(r.URL.Query().Get("state"))
		reply(w, out, http.StatusInternalServerError, err)
	}
}

// approve answers POST /v1/approve.
func (h *handlers) approve(ab ApprovalBackend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req ApproveRequest
		if !readRequest(w, r, h.b.MaxArgs(), &req) {
			return
		}
		if req.Target == "" {
			fail(w, http.StatusBadRequest, errors.New("agentos: the approve request names no approval request id or tool path"))
			return
		}
		out, err := ab.Decide(req)
		reply(w, out, http.StatusUnprocessableEntity, err)
	}
}

// revoke answers POST /v1/revoke.
func (h *handlers) revoke(rb RevokeBackend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req RevokeRequest
		if !readRequest(w, r, h.b.MaxArgs(), &req) {
			return
		}
		out, err := rb.Revoke(req)
		reply(w, out, http.StatusUnprocessableEntity, err)
	}
}

// fanOut asks every member's kernel actor at once, each within 5 s, and
// answers their replies in the members' order.
func fanOut(w http.ResponseWriter, r *http.Request, b Backend, ask func(context.Context, kernelclient.Client) (any, error)) {
	ks := b.Kernels()
	if ks == nil {
		fail(w, http.StatusNotFound, errors.New("this node is in no cluster: start it with 'agentos serve --cluster' (see docs/CLUSTER.md)"))
		return
	}
	out := make([]NodeReply, len(ks))
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			out[i].Node = k.Node
			v, err := ask(ctx, k.Kernel)
			if err != nil {
				out[i].Error = clip.N(err.Error(), errorLimit)
				return
			}
			out[i].Result, _ = json.Marshal(v)
		})
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, out)
}

// kernelStatus is the status of a kernel error: 404 for a process or
// snapshot that is not there, 409 for a name held or a snapshot restored
// already (or whose process still runs), 400 for an invalid request (a seal
// that does not verify, an unknown image), 422 otherwise.
func kernelStatus(err error) int {
	switch {
	case errors.Is(err, kernelclient.ErrNoProcess), errors.Is(err, journal.ErrNoRun):
		return http.StatusNotFound
	case errors.Is(err, kernelclient.ErrNameTaken), errors.Is(err, kernelclient.ErrNotRestorable):
		return http.StatusConflict
	case errors.Is(err, kernelclient.ErrInvalid), errors.Is(err, journal.ErrAmbiguous):
		return http.StatusBadRequest
	default:
		return http.StatusUnprocessableEntity
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
