package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/kernel"
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
//   - With Options.TasksDir, each task is a file there (0600), so a task
//     outlives the node: after a restart, a task whose call the restart
//     cut short is answered from the journal: its forge, which the node
//     resumes at start (agentos serve), ends it with the forge's result;
//     a tool run that was cut short fails, naming the run to recover.
//   - Tasks are served over HTTP without a session (the 2026-07-28 way);
//     a task is kept DefaultTaskTTL after it was created.

// TasksExtension is the extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// DefaultTaskTTL is how long a task and its result are kept.
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
}

// terminal reports whether the task ended.
func (t *taskRecord) terminal() bool { return t.Status != taskWorking }

// wire is the Task of the protocol; withResult adds the result or error
// of an ended task (tasks/get).
func (t *taskRecord) wire(withResult bool) map[string]any {
	m := map[string]any{
		"taskId": t.ID, "status": t.Status, "createdAt": t.Created.UTC().Format(time.RFC3339),
		"lastUpdatedAt": t.Updated.UTC().Format(time.RFC3339), "ttl": DefaultTaskTTL.Milliseconds(),
		"pollInterval": taskPollInterval.Milliseconds(),
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

// taskStore keeps the tasks: in dir when set, else in memory. It is safe
// for concurrent use.
type taskStore struct {
	dir string
	mu  sync.Mutex
	mem map[string]*taskRecord
	// live are the cancels of the tasks running in this process.
	live map[string]context.CancelCauseFunc
	wg   sync.WaitGroup
}

// errTaskCancelled and errShutdown say why a task's context ended.
var (
	errTaskCancelled = errors.New("cancelled by tasks/cancel")
	errShutdown      = errors.New("the node is stopping")
)

func (ts *taskStore) file(id string) string { return filepath.Join(ts.dir, id+".json") }

// validTaskID reports whether id is one this server made (32 hex digits):
// nothing else names a file.
func validTaskID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func (ts *taskStore) save(t *taskRecord) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.dir == "" {
		if ts.mem == nil {
			ts.mem = map[string]*taskRecord{}
		}
		c := *t
		ts.mem[t.ID] = &c
		return nil
	}
	if err := os.MkdirAll(ts.dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	tmp := ts.file(t.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, ts.file(t.ID))
}

// load returns the task id, or nil when there is none (or it expired).
func (ts *taskStore) load(id string) *taskRecord {
	if !validTaskID(id) {
		return nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var t *taskRecord
	if ts.dir == "" {
		if m := ts.mem[id]; m != nil {
			c := *m
			t = &c
		}
	} else if b, err := os.ReadFile(ts.file(id)); err == nil {
		t = &taskRecord{}
		if json.Unmarshal(b, t) != nil {
			t = nil
		}
	}
	if t != nil && time.Since(t.Created) > DefaultTaskTTL {
		if ts.dir == "" {
			delete(ts.mem, id)
		} else {
			_ = os.Remove(ts.file(id))
		}
		return nil
	}
	return t
}

// list returns the ids of the kept tasks.
func (ts *taskStore) list() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var ids []string
	if ts.dir == "" {
		for id := range ts.mem {
			ids = append(ids, id)
		}
	} else {
		ents, _ := os.ReadDir(ts.dir)
		for _, e := range ents {
			if id, ok := cutSuffix(e.Name(), ".json"); ok && validTaskID(id) {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}

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
	var p struct {
		TaskID    string          `json:"taskId"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      json.RawMessage `json:"task"`
		Meta      struct {
			Caps struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	if len(msg.Params) > 0 && json.Unmarshal(msg.Params, &p) != nil && msg.Method != "tools/call" {
		writeRPC(w, msg.ID, nil, -32602, fmt.Errorf("%s: the params must be an object with taskId", msg.Method))
		return true
	}
	switch msg.Method {
	case "tools/call":
		_, declared := p.Meta.Caps.Extensions[TasksExtension]
		if !declared && len(p.Task) == 0 {
			return false
		}
		path, ok := s.taskable(id.p, p.Name, p.Arguments)
		if !ok {
			return false // a quick call: answered as usual
		}
		t, err := s.startTask(id, p.Name, path, p.Arguments)
		if err != nil {
			writeRPC(w, msg.ID, nil, -32603, err)
			return true
		}
		res := t.wire(false)
		res["resultType"] = "task"
		if len(p.Task) > 0 && !declared {
			res = map[string]any{"task": t.wire(false)} // 2025-11-25's CreateTaskResult
		}
		writeRPC(w, msg.ID, res, 0, nil)
	case "tasks/get", "tasks/result", "tasks/cancel":
		t := s.task(id, p.TaskID)
		if t == nil {
			writeRPC(w, msg.ID, nil, -32602, fmt.Errorf("no task %q of this client (a task is answered only to the token that started it, for %s)", p.TaskID, DefaultTaskTTL))
			return true
		}
		switch msg.Method {
		case "tasks/get":
			writeRPC(w, msg.ID, t.wire(true), 0, nil)
		case "tasks/result":
			if !t.terminal() {
				writeRPC(w, msg.ID, nil, -32602, fmt.Errorf("task %s is still %s: poll tasks/get until it ends", t.ID, t.Status))
			} else if t.Result != nil {
				writeRPC(w, msg.ID, t.Result, 0, nil)
			} else {
				writeRPC(w, msg.ID, nil, -32603, errors.New(t.Error))
			}
		case "tasks/cancel":
			writeRPC(w, msg.ID, s.cancelTask(t).wire(false), 0, nil)
		}
	case "tasks/list":
		var out []map[string]any
		for _, tid := range s.tasks.list() {
			if t := s.task(id, tid); t != nil {
				out = append(out, t.wire(false))
			}
		}
		if out == nil {
			out = []map[string]any{}
		}
		writeRPC(w, msg.ID, map[string]any{"tasks": out}, 0, nil)
	default:
		return false
	}
	return true
}

// taskable reports whether a call of the tool name by p becomes a task
// (the long ones: forge_tool, exec_tool, a registered tool) and the path
// of the tool it runs ("" for forge_tool).
func (s *Server) taskable(p *kernel.Process, name string, args json.RawMessage) (string, bool) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	return t.Path, ok
}

// startTask starts the call of tool as id's process in the background and
// returns its task.
func (s *Server) startTask(id ident, tool, path string, args json.RawMessage) (*taskRecord, error) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	now := time.Now()
	t := &taskRecord{ID: hex.EncodeToString(raw[:]), Owner: id.user, Process: id.p.Name(), Tool: tool, Path: path, Args: args,
		Created: now, Updated: now, Status: taskWorking, Message: tool + " is running"}
	if err := s.tasks.save(t); err != nil {
		return nil, fmt.Errorf("the task cannot be kept: %w", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s.tasks.mu.Lock()
	if s.tasks.live == nil {
		s.tasks.live = map[string]context.CancelCauseFunc{}
	}
	s.tasks.live[t.ID] = cancel
	s.tasks.wg.Add(1)
	s.tasks.mu.Unlock()
	go s.runTask(ctx, id.p, t)
	return t, nil
}

// runTask runs t's call as p through p's own MCP server (the handlers a
// tools/call meets) and records how it ended. A call the node's shutdown
// cut short stays "working": the restarted node answers it from the
// journal (resolve).
func (s *Server) runTask(ctx context.Context, p *kernel.Process, t *taskRecord) {
	defer s.tasks.wg.Done()
	defer func() {
		s.tasks.mu.Lock()
		delete(s.tasks.live, t.ID)
		s.tasks.mu.Unlock()
	}()
	res, err := s.callInProcess(ctx, p, t.Tool, t.Args)
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errShutdown):
		return
	case errors.Is(cause, errTaskCancelled):
		t.Status, t.Error = taskCancelled, "cancelled by the client (tasks/cancel)"
	case err != nil:
		t.Status, t.Error = taskFailed, err.Error()
	default:
		b, _ := json.Marshal(res)
		t.Status, t.Result = taskCompleted, b
	}
	t.Message, t.Updated = t.Tool+" "+t.Status, time.Now()
	if err := s.tasks.save(t); err != nil {
		s.log.Warn("mcp: a task's end was not kept", "task", t.ID, "err", err)
	}
}

// callInProcess calls tool with args on p's MCP server over an in-memory
// session.
func (s *Server) callInProcess(ctx context.Context, p *kernel.Process, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentos-task", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var a any = json.RawMessage("{}")
	if len(args) > 0 {
		a = args
	}
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
}

// task returns the task tid of id's token, resolved from the journal when
// the call that ran it was cut short by a restart; nil: none.
func (s *Server) task(id ident, tid string) *taskRecord {
	t := s.tasks.load(tid)
	if t == nil || t.Owner != id.user {
		return nil
	}
	if !t.terminal() {
		s.tasks.mu.Lock()
		_, live := s.tasks.live[t.ID]
		s.tasks.mu.Unlock()
		if !live {
			s.resolve(t)
		}
	}
	return t
}

// cancelTask cancels t if it runs here, and records it cancelled.
func (s *Server) cancelTask(t *taskRecord) *taskRecord {
	if t.terminal() {
		return t
	}
	s.tasks.mu.Lock()
	cancel, live := s.tasks.live[t.ID]
	s.tasks.mu.Unlock()
	if live {
		cancel(errTaskCancelled)
	}
	t.Status, t.Error, t.Message, t.Updated = taskCancelled, "cancelled by the client (tasks/cancel)", t.Tool+" cancelled", time.Now()
	_ = s.tasks.save(t)
	return t
}

// resolve ends a task whose call a restart of the node cut short, from the
// journal: the run it started, found by its caller, tool and start.
func (s *Server) resolve(t *taskRecord) {
	if s.opts.Journal == nil {
		s.endOrphan(t, taskFailed, nil, "the node restarted while the task ran and keeps no journal: start it again")
		return
	}
	runs, err := s.opts.Journal.Runs()
	if err != nil {
		return // answered "working"; the next poll tries again
	}
	var run *journal.RunMeta
	for i := range runs {
		if r := &runs[i]; !r.Started.Before(t.Created.Add(-time.Second)) && s.ranFor(t, *r) {
			run = r
			break
		}
	}
	switch {
	case run == nil:
		s.endOrphan(t, taskFailed, nil, "the node stopped before the task's run began: start it again")
	case run.Status == journal.StatusOK:
		var res *mcp.CallToolResult
		if t.Tool == "forge_tool" {
			res = plainResult(run.Result, nil)
		} else {
			res = success(run.Result)
		}
		res.Meta = mcp.Meta{"agentos/run_id": run.ID}
		b, _ := json.Marshal(res)
		s.endOrphan(t, taskCompleted, b, "")
	case run.Status == journal.StatusRunning && t.Tool == "forge_tool":
		t.Message = "forge_tool was resumed by the node after its restart (run " + run.ID + ")"
	case run.Status == journal.StatusRunning:
		s.endOrphan(t, taskFailed, nil, fmt.Sprintf("the node restarted during run %s: 'agentos recover --run %s' resumes it", run.ID, run.ID))
	default:
		b, _ := json.Marshal(failure(KindError, fmt.Sprintf("run %s %s: %s", run.ID, run.Status, string(run.Error))))
		s.endOrphan(t, taskCompleted, b, "")
	}
}

// ranFor reports whether run is the one t's call started.
func (s *Server) ranFor(t *taskRecord, run journal.RunMeta) bool {
	if t.Tool == "forge_tool" {
		var a struct {
			Spec string `json:"spec"`
		}
		spec, ok := forge.SpecOf(run)
		return ok && json.Unmarshal(t.Args, &a) == nil && spec == a.Spec
	}
	return run.Tool == t.Path && run.Caller != nil && run.Caller.Process == t.Process
}

// endOrphan records the end of a task the restart cut short.
func (s *Server) endOrphan(t *taskRecord, status string, result json.RawMessage, why string) {
	t.Status, t.Result, t.Error, t.Updated = status, result, why, time.Now()
	t.Message = t.Tool + " " + status
	if err := s.tasks.save(t); err != nil {
		s.log.Warn("mcp: a task's end was not kept", "task", t.ID, "err", err)
	}
}

// stopTasks cancels the tasks running here (they stay "working" for the
// restarted node) and waits for them.
func (s *Server) stopTasks() {
	s.tasks.mu.Lock()
	for _, cancel := range s.tasks.live {
		cancel(errShutdown)
	}
	s.tasks.mu.Unlock()
	s.tasks.wg.Wait()
}
