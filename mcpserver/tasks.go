package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/forge/forgerun"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/journal"
)

// Tasks (MCP 2026-07-28, the io.modelcontextprotocol/tasks extension;
// docs/MCP.md, "Tasks"). A client that declares the extension in a
// tools/call request's _meta (io.modelcontextprotocol/clientCapabilities)
// or sends a 2025-11-25 "task" parameter gets, for forge_tool, exec_tool
// and the registered tools, a task handle at once instead of the result:
// {"resultType": "task", "taskId", "status": "working", ...}. It fetches
// the result later with tasks/get (any request, any connection: the
// client may disconnect meanwhile), and may cancel it with tasks/cancel;
// tasks/result and tasks/list (2025-11-25) are answered too.
//
// IMPORTANT:
//   - A task belongs to the token that started it (or to the anonymous
//     clients together): another token's tasks/get is answered "no such
//     task", as for an id that never existed.
//   - The call runs exactly as the client's own tools/call would (the same
//     handler, its rights, quota, PII tokenization, journal); a high-risk
//     tool cannot ask for a confirmation from a task: it fails "confirmation".
//   - A token has at most Options.MaxLiveTasks tasks running at once; one
//     more is refused with ErrTaskCap, saying so.
//   - With Options.TasksDir, each task is a file there (0600), so a task
//     outlives the node. A running task records the journal run its call
//     began (RunID) as soon as the run exists; after a restart, a task
//     whose call the restart cut short is answered from that run: its
//     forge, which the node resumes at start (agentos serve), ends it with
//     the forge's result; a tool run that was cut short fails, naming the
//     run to recover.
//   - Tasks are served over HTTP without a session (the 2026-07-28 way),
//     and on a transport Run serves (stdio; taskconn.go);
//     a task is kept Options.TaskTTL after it was created, then removed
//     by a sweep every Options.TaskSweep. tasks/list answers a page of
//     taskPageSize tasks (nextCursor), reading only that page's files.

// TasksExtension is the extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// DefaultTaskTTL is how long a task and its result are kept when
// Options.TaskTTL is 0.
const DefaultTaskTTL = 24 * time.Hour

// taskPollInterval is the interval the tasks suggest between polls.
const taskPollInterval = time.Second

// The statuses of a task.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// taskRecord is one task, as kept in Options.TasksDir.
type taskRecord struct {
	ID      string          `json:"taskId"`
	Owner   string          `json:"owner"`   // ident.user of the token that started it
	Process string          `json:"process"` // the name of its process (a run's caller)
	Tool    string          `json:"tool"`    // the MCP tool called
	Path    string          `json:"path,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
	Status  string          `json:"status"`
	Message string          `json:"message,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"` // a CallToolResult
	Error   string          `json:"error,omitempty"`  // why a failed task failed
	// RunID is the journal run the call began, recorded once it is known
	// (its first progress after the run began, or its result): a
	// restarted node answers the task from that run.
	RunID string `json:"runId,omitempty"`
}

// terminal reports whether the task ended.
func (t *taskRecord) terminal() bool { return t.Status != taskWorking }

// wire is the Task of the protocol; withResult adds the result or error
// of an ended task (tasks/get).
func (t *taskRecord) wire(withResult bool) map[string]any {
	m := map[string]any{
		"taskId": t.ID, "status": t.Status, "createdAt": t.Created.UTC().Format(time.RFC3339),
		"lastUpdatedAt": t.Updated.UTC().Format(time.RFC3339),
		"pollInterval":  taskPollInterval.Milliseconds(),
	}
	if t.Message != "" {
		m["statusMessage"] = t.Message
	}
	if withResult {
		switch {
		case t.Status == taskCompleted && t.Result != nil:
			m["result"] = t.Result
		case t.Status == taskFailed || t.Status == taskCancelled:
			m["error"] = map[string]any{"code": -32603, "message": t.Error}
		}
	}
	return m
}

// errTaskCancelled and errShutdown say why a task's context ended.
var (
	errTaskCancelled = errors.New("cancelled by tasks/cancel")
	errShutdown      = errors.New("the node is stopping")
)

// rpcMessage is a JSON-RPC request.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// writeRPC answers the request id with result, or with a JSON-RPC error
// when err is set.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, code int, err error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		msg["error"] = map[string]any{"code": code, "message": err.Error()}
	} else {
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

// serveTask answers a tasks request, or a tools/call that becomes a task,
// of the request r as id (its body read); false: it is neither, and the
// SDK serves it.
func (s *Server) serveTask(w http.ResponseWriter, r *http.Request, id ident, body []byte) bool {
	var msg rpcMessage
	if json.Unmarshal(body, &msg) != nil || len(msg.ID) == 0 {
		return false
	}
	var p taskParams
	if len(msg.Params) > 0 && json.Unmarshal(msg.Params, &p) != nil && msg.Method != "tools/call" {
		writeRPC(w, msg.ID, nil, -32602, fmt.Errorf("%s: the params must be an object with taskId", msg.Method))
		return true
	}
	result, code, err, ok := s.taskMethod(id, msg.Method, p)
	if !ok {
		return false
	}
	writeRPC(w, msg.ID, result, code, err)
	return true
}

// taskParams are the params of the requests tasks.go answers.
type taskParams struct {
	TaskID    string          `json:"taskId"`
	Cursor    string          `json:"cursor"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Task      json.RawMessage `json:"task"`
	Meta      struct {
		Caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

// taskMethod answers method with params p for id: its result, or a
// JSON-RPC error code and error; ok false: the request is not one of
// tasks, and is served as usual.
func (s *Server) taskMethod(id ident, method string, p taskParams) (result any, code int, err error, ok bool) {
	switch method {
	case "tools/call":
		_, declared := p.Meta.Caps.Extensions[TasksExtension]
		if !declared && len(p.Task) == 0 {
			return nil, 0, nil, false
		}
		path, taskable := s.taskable(id.p, p.Name, p.Arguments)
		if !taskable {
			return nil, 0, nil, false // a quick call: answered as usual
		}
		t, err := s.startTask(id, p.Name, path, p.Arguments)
		if err != nil {
			return nil, -32603, err, true
		}
		res := s.wire(t, false)
		res["resultType"] = "task"
		if len(p.Task) > 0 && !declared {
			res = map[string]any{"task": s.wire(t, false)} // 2025-11-25's CreateTaskResult
		}
		return res, 0, nil, true
	case "tasks/get", "tasks/result", "tasks/cancel":
		t := s.task(id, p.TaskID)
		if t == nil {
			return nil, -32602, fmt.Errorf("no task %q of this client (a task is answered only to the token that started it, for %s)", p.TaskID, s.tasks.ttl), true
		}
		switch {
		case method == "tasks/get":
			return s.wire(t, true), 0, nil, true
		case method == "tasks/cancel":
			return s.wire(s.cancelTask(t), false), 0, nil, true
		case !t.terminal():
			return nil, -32602, fmt.Errorf("task %s is still %s: poll tasks/get until it ends", t.ID, t.Status), true
		case t.Result != nil:
			return t.Result, 0, nil, true
		default:
			return nil, -32603, errors.New(t.Error), true
		}
	case "tasks/list":
		return s.listTasks(id, p.Cursor)
	}
	return nil, 0, nil, false
}

// listTasks answers tasks/list: a page of id's tasks, oldest first, with
// nextCursor when more follow.
func (s *Server) listTasks(id ident, cursor string) (any, int, error, bool) {
	page, next, err := s.tasks.page(id.user, cursor, taskPageSize)
	if err != nil {
		return nil, -32602, err, true
	}
	out := make([]map[string]any, 0, len(page))
	for _, t := range page {
		if !t.terminal() {
			if now := s.task(id, t.ID); now != nil {
				t = now // resolved from the journal after a restart
			}
		}
		out = append(out, s.wire(t, false))
	}
	res := map[string]any{"tasks": out}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, 0, nil, true
}

// wire is t as the protocol's Task.
func (s *Server) wire(t *taskRecord, withResult bool) map[string]any {
	m := t.wire(withResult)
	m["ttl"] = s.tasks.ttl.Milliseconds()
	return m
}

// taskable reports whether a call of the tool name by p becomes a task
// (the long ones: forge_tool, exec_tool, a registered tool) and the path
// of the tool it runs ("" for forge_tool).
func (s *Server) taskable(p proc.Process, name string, args json.RawMessage) (string, bool) {
	switch name {
	case "forge_tool":
		return "", true
	case "exec_tool":
		var a struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(args, &a)
		return a.Path, true
	}
	s.catchUp(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	return t.Path, ok
}

// startTask starts the call of tool as id's process in the background and
// returns its task. It is refused when id's token has MaxLiveTasks
// running, or the server is closing.
func (s *Server) startTask(id ident, tool, path string, args json.RawMessage) (*taskRecord, error) {
	now := time.Now()
	t := &taskRecord{ID: newTaskID(now), Owner: id.user, Process: id.p.Name(), Tool: tool, Path: path, Args: args,
		Created: now, Updated: now, Status: taskWorking, Message: tool + " is running"}
	ctx, cancel := context.WithCancelCause(context.Background())
	if err := s.tasks.begin(t, cancel); err != nil {
		cancel(nil)
		return nil, err
	}
	run := *t // the goroutine's own copy: t is answered to the client meanwhile
	go s.runTask(ctx, id.p, &run)
	return t, nil
}

// runTask runs t's call as p through p's own MCP server (the handlers a
// tools/call meets) and records how it ended. A call the node's shutdown
// cut short stays "working": the restarted node answers it from the
// journal (resolve).
func (s *Server) runTask(ctx context.Context, p proc.Process, t *taskRecord) {
	defer s.tasks.done(t.ID)
	res, err := s.callInProcess(ctx, p, t)
	cause := context.Cause(ctx)
	if errors.Is(cause, errShutdown) {
		return
	}
	_, err = s.tasks.finish(t.Owner, t.ID, func(r *taskRecord) {
		switch {
		case errors.Is(cause, errTaskCancelled):
			r.Status, r.Error = taskCancelled, "cancelled by the client (tasks/cancel)"
		case err != nil:
			r.Status, r.Error = taskFailed, err.Error()
		default:
			b, _ := json.Marshal(res)
			r.Status, r.Result = taskCompleted, b
			if id, ok := res.Meta["agentos/run_id"].(string); ok {
				r.RunID = id
			}
		}
		r.Message = r.Tool + " " + r.Status
	})
	if err != nil {
		s.log.Warn("mcp: a task's end was not kept", "task", t.ID, "err", err)
	}
}

// callInProcess calls t's tool with its args on p's MCP server over an
// in-memory session. The call's progress notifications keep the task's
// status message, and record its journal run once it has begun.
func (s *Server) callInProcess(ctx context.Context, p proc.Process, t *taskRecord) (*mcp.CallToolResult, error) {
	srv, err := s.For(p)
	if err != nil {
		return nil, err
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	progress := func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { s.taskProgress(t, r.Params.Message) }
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentos-task", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: progress}).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var a any = json.RawMessage("{}")
	if len(t.Args) > 0 {
		a = t.Args
	}
	params := &mcp.CallToolParams{Name: t.Tool, Arguments: a}
	params.SetProgressToken(t.ID)
	return cs.CallTool(ctx, params)
}

// taskProgress records a running task's progress message and, until it is
// known, the journal run its call began. Called on the call's session
// (one notification at a time).
func (s *Server) taskProgress(t *taskRecord, msg string) {
	if t.RunID == "" {
		t.RunID = s.runOf(t)
	}
	runID := t.RunID
	if err := s.tasks.update(t.Owner, t.ID, func(r *taskRecord) {
		if msg != "" {
			r.Message = msg
		}
		r.RunID = runID
	}); err != nil {
		s.log.Debug("mcp: a task's progress was not kept", "task", t.ID, "err", err)
	}
}

// runOf finds the journal run t's call began: the unfinished run of its
// kind made for it since it was created that no other task of this node
// holds; "" while there is none yet (or no journal).
func (s *Server) runOf(t *taskRecord) string {
	if s.opts.Journal == nil {
		return ""
	}
	runs, err := s.opts.Journal.Unfinished()
	if err != nil {
		return ""
	}
	for _, r := range runs {
		if !r.Started.Before(t.Created.Add(-time.Second)) && s.ranFor(t, r) && s.tasks.claimRun(t.ID, r.ID) {
			return r.ID
		}
	}
	return ""
}

// task returns the task tid of id's token, resolved from the journal when
// the call that ran it was cut short by a restart; nil: none.
func (s *Server) task(id ident, tid string) *taskRecord {
	t, live := s.tasks.get(id.user, tid)
	if t != nil && !t.terminal() && !live {
		return s.resolve(t)
	}
	return t
}

// cancelTask cancels t if it runs here, and records it cancelled (unless
// it ended first: then it is answered as it ended).
func (s *Server) cancelTask(t *taskRecord) *taskRecord {
	if t.terminal() {
		return t
	}
	s.tasks.cancel(t.ID, errTaskCancelled)
	now, err := s.tasks.finish(t.Owner, t.ID, func(r *taskRecord) {
		r.Status, r.Error, r.Message = taskCancelled, "cancelled by the client (tasks/cancel)", r.Tool+" cancelled"
	})
	if err != nil || now == nil {
		return t
	}
	return now
}

// resolve ends a task whose call a restart of the node cut short, from the
// journal: the run its call began, by the id the task recorded; a task
// cut short before its run was recorded (its first progress) is matched by
// its caller, tool and start. It returns the task as it is now.
func (s *Server) resolve(t *taskRecord) *taskRecord {
	if s.opts.Journal == nil {
		return s.endOrphan(t, taskFailed, nil, "the node restarted while the task ran and keeps no journal: start it again")
	}
	run, ok := s.runOfOrphan(t)
	if !ok {
		return t // answered "working"; the next poll tries again
	}
	switch {
	case run == nil:
		return s.endOrphan(t, taskFailed, nil, "the node stopped before the task's run began: start it again")
	case run.Status == journal.StatusOK:
		var res *mcp.CallToolResult
		if t.Tool == "forge_tool" {
			res = plainResult(run.Result, nil)
		} else {
			res = success(run.Result)
		}
		res.Meta = mcp.Meta{"agentos/run_id": run.ID}
		b, _ := json.Marshal(res)
		return s.endOrphan(t, taskCompleted, b, "")
	case run.Status == journal.StatusRunning && t.Tool == "forge_tool":
		t.Message = "forge_tool was resumed by the node after its restart (run " + run.ID + ")"
		return t
	case run.Status == journal.StatusRunning:
		return s.endOrphan(t, taskFailed, nil, fmt.Sprintf("the node restarted during run %s: 'agentos recover --run %s' resumes it", run.ID, run.ID))
	default:
		b, _ := json.Marshal(failure(KindError, fmt.Sprintf("run %s %s: %s", run.ID, run.Status, string(run.Error))))
		return s.endOrphan(t, taskCompleted, b, "")
	}
}

// runOfOrphan is the journal run of t, cut short by a restart: by its
// recorded id, else matched; nil: none began; ok false: the journal did
// not answer.
func (s *Server) runOfOrphan(t *taskRecord) (*journal.RunMeta, bool) {
	if t.RunID != "" {
		run, err := s.opts.Journal.Get(t.RunID)
		if err != nil {
			return nil, false
		}
		return &run, true
	}
	runs, err := s.opts.Journal.Runs()
	if err != nil {
		return nil, false
	}
	for i := range runs {
		if r := &runs[i]; !r.Started.Before(t.Created.Add(-time.Second)) && s.ranFor(t, *r) {
			return r, true
		}
	}
	return nil, true
}

// ranFor reports whether run may be the one t's call began.
func (s *Server) ranFor(t *taskRecord, run journal.RunMeta) bool {
	if t.Tool == "forge_tool" {
		var a struct {
			Spec string `json:"spec"`
		}
		spec, ok := forgerun.SpecOf(run)
		return ok && json.Unmarshal(t.Args, &a) == nil && spec == a.Spec
	}
	return run.Tool == t.Path && run.Caller != nil && run.Caller.Process == t.Process
}

// endOrphan records the end of a task the restart cut short, unless
// another poll ended it first, and returns it as it is now.
func (s *Server) endOrphan(t *taskRecord, status string, result json.RawMessage, why string) *taskRecord {
	now, err := s.tasks.finish(t.Owner, t.ID, func(r *taskRecord) {
		r.Status, r.Result, r.Error = status, result, why
		r.Message = r.Tool + " " + status
	})
	if err != nil {
		s.log.Warn("mcp: a task's end was not kept", "task", t.ID, "err", err)
	}
	if now == nil {
		return t
	}
	return now
}

// stopTasks refuses new tasks, cancels the tasks running here (they stay
// "working" for the restarted node) and waits for them.
func (s *Server) stopTasks() { s.tasks.close(errShutdown) }
