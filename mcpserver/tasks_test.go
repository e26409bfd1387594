package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
)

// rpc posts one JSON-RPC request of MCP 2026-07-28 (no session) as token
// and returns its result, or fails on an error unless wantErr.
func rpc(t *testing.T, url, token, method string, params any) (map[string]any, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url+mcpserver.Path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Method", method)
	if p, ok := params.(map[string]any); ok && p["name"] != nil {
		req.Header.Set("Mcp-Name", p["name"].(string))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(raw), "data: "); i >= 0 { // an event stream
		raw = raw[i+len("data: "):]
		if j := strings.IndexByte(string(raw), '\n'); j >= 0 {
			raw = raw[:j]
		}
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
	}
	if msg.Error != nil {
		return nil, msg.Error.Message
	}
	return msg.Result, ""
}

// tasksMeta declares the tasks extension in a request's _meta.
var tasksMeta = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcpserver.TasksExtension: map[string]any{}}}}

// pollTask polls tasks/get until the task ends.
func pollTask(t *testing.T, url, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got, errMsg := rpc(t, url, token, "tasks/get", map[string]any{"taskId": id})
		if errMsg != "" {
			t.Fatalf("tasks/get %s: %s", id, errMsg)
		}
		if got["status"] != "working" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working: %v", id, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 29 item 2: a client declaring the tasks extension gets a task
// handle for a tool run and fetches its result later, on another request;
// another token's client cannot see it.
func TestTasks(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	defer hs.Close()
	grants := []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}
	tok := e.rt.Kernel().Authority().Mint("tasks", grants, capability.Caveats{}).Encode()
	other := e.rt.Kernel().Authority().Mint("other", grants, capability.Caveats{}).Encode()

	created, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "_meta": tasksMeta})
	if errMsg != "" || created["resultType"] != "task" || created["status"] != "working" {
		t.Fatalf("tools/call with the tasks extension: %v %s", created, errMsg)
	}
	id, _ := created["taskId"].(string)
	if _, errMsg := rpc(t, hs.URL, other, "tasks/get", map[string]any{"taskId": id}); !strings.Contains(errMsg, "no task") {
		t.Errorf("another token's tasks/get: %q, want no such task", errMsg)
	}
	done := pollTask(t, hs.URL, tok, id)
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || res == nil || !strings.Contains(mustString(res["content"]), `"55"`) {
		t.Fatalf("the task's end: %v", done)
	}
	// Without the extension, the same call answers at once.
	plain, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{}}})
	if errMsg != "" || plain["resultType"] == "task" {
		t.Errorf("tools/call without the extension: %v %s", plain, errMsg)
	}
}

// A page whose name rebinds to 127.0.0.1 (DNS rebinding) reaches a
// loopback node's endpoint with its own Host: refused before anything
// runs, on the tasks path as on every other, even for an anonymous node
// (found by review: the tasks path answered before the SDK's check).
func TestTasksRefuseARebindingHost(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	anon := clientProc(t, e, "anonymous", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Exec, Scope: "tools/"})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: anon}))
	defer hs.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "_meta": tasksMeta}})
	for _, host := range []string{"attacker.example", "attacker.example:80"} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+mcpserver.Path, strings.NewReader(string(body)))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(raw), "DNS rebinding") {
			t.Errorf("Host %s: %d %s, want 403 naming DNS rebinding", host, resp.StatusCode, raw)
		}
	}
	// The same request under the node's own name still makes a task.
	tok := e.rt.Kernel().Authority().Mint("tasks", []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}, capability.Caveats{}).Encode()
	if created, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "_meta": tasksMeta}); errMsg != "" || created["resultType"] != "task" {
		t.Fatalf("a loopback Host: %v %s", created, errMsg)
	}
}

// taskServer is a Server of e's node with opts changed by mod, closed by
// the test; and an httptest server of it.
func taskServer(t *testing.T, e *env, mod func(*mcpserver.Options)) (*mcpserver.Server, *httptest.Server) {
	t.Helper()
	opts := mcpserver.Options{Node: e.rt.Node(), Registry: e.rt.Node().RegistryClient(), Logger: quiet, ProgressInterval: 50 * time.Millisecond, Journal: e.rt.Journal()}
	if mod != nil {
		mod(&opts)
	}
	srv, err := mcpserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv, hs
}

// toolGrants read and run the tools.
var toolGrants = []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}

// startTask makes a task of tools/call name(args) as tok.
func startTask(t *testing.T, url, tok, name string, args map[string]any) string {
	t.Helper()
	created, errMsg := rpc(t, url, tok, "tools/call", map[string]any{"name": name, "arguments": args, "_meta": tasksMeta})
	id, _ := created["taskId"].(string)
	if errMsg != "" || id == "" {
		t.Fatalf("tools/call %s as a task: %v %s", name, created, errMsg)
	}
	return id
}

// A token may have MaxLiveTasks tasks running at once: one more is refused
// saying the cap and what to do; another token is not held up; once one
// ends, the token may start another (review of issue 29 item 2).
func TestTaskCapPerToken(t *testing.T) {
	e := newEnv(t, host.Config{Limits: host.LimitsConfig{Timeout: host.Duration(10 * time.Minute)}})
	for path, src := range map[string]string{samples.FibPath: samples.FibTool, "tools/spin.ts": spinTool} {
		if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": path, "content": src})); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := taskServer(t, e, func(o *mcpserver.Options) { o.MaxLiveTasks = 1 })
	tok := e.rt.Kernel().Authority().Mint("capped", toolGrants, capability.Caveats{}).Encode()
	other := e.rt.Kernel().Authority().Mint("other", toolGrants, capability.Caveats{}).Encode()

	spin := startTask(t, hs.URL, tok, "spin", map[string]any{"n": 1})
	_, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "_meta": tasksMeta})
	for _, want := range []string{"1 tasks running", "tasks/cancel", "at once"} {
		if !strings.Contains(errMsg, want) {
			t.Errorf("a task over the cap: %q, want it to say %q", errMsg, want)
		}
	}
	if done := pollTask(t, hs.URL, other, startTask(t, hs.URL, other, "math_fib", map[string]any{"n": 10})); done["status"] != "completed" {
		t.Errorf("another token's task: %v", done)
	}
	// The running task's statusMessage follows its call's progress.
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		got, _ := rpc(t, hs.URL, tok, "tasks/get", map[string]any{"taskId": spin})
		if msg, _ := got["statusMessage"].(string); strings.Contains(msg, "running for") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running task's statusMessage never reported progress: %v", got)
		}
	}
	if got, errMsg := rpc(t, hs.URL, tok, "tasks/cancel", map[string]any{"taskId": spin}); errMsg != "" || got["status"] != "cancelled" {
		t.Fatalf("tasks/cancel: %v %s", got, errMsg)
	}
	deadline := time.Now().Add(wait)
	for {
		created, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "_meta": tasksMeta})
		if errMsg == "" {
			if done := pollTask(t, hs.URL, tok, created["taskId"].(string)); done["status"] != "completed" {
				t.Errorf("a task after the cancelled one: %v", done)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused after the running task was cancelled: %s", errMsg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tasks/list answers pages (nextCursor), oldest first, of the client's own
// tasks only, reading only the page's task files; a cursor it never
// answered is refused (review of issue 29 item 2: it read every file).
func TestTasksListPages(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	defer mcpserver.SetTaskPageSize(2)()
	srv, hs := taskServer(t, e, func(o *mcpserver.Options) { o.TasksDir = t.TempDir() })
	tok := e.rt.Kernel().Authority().Mint("lister", toolGrants, capability.Caveats{}).Encode()
	other := e.rt.Kernel().Authority().Mint("other", toolGrants, capability.Caveats{}).Encode()
	var mine []string
	for i := range 5 {
		mine = append(mine, startTask(t, hs.URL, tok, "math_fib", map[string]any{"n": i}))
		pollTask(t, hs.URL, tok, mine[i])
		pollTask(t, hs.URL, other, startTask(t, hs.URL, other, "math_fib", map[string]any{"n": i}))
	}
	var listed []string
	cursor, pages := "", 0
	for {
		before := mcpserver.TaskFileReads(srv)
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		page, errMsg := rpc(t, hs.URL, tok, "tasks/list", params)
		if errMsg != "" {
			t.Fatal(errMsg)
		}
		if reads := mcpserver.TaskFileReads(srv) - before; reads > 2 {
			t.Errorf("page %d read %d task files, want at most its 2", pages, reads)
		}
		tasks, _ := page["tasks"].([]any)
		if len(tasks) > 2 {
			t.Fatalf("page %d holds %d tasks, want at most 2", pages, len(tasks))
		}
		for _, x := range tasks {
			listed = append(listed, x.(map[string]any)["taskId"].(string))
		}
		pages++
		cursor, _ = page["nextCursor"].(string)
		if cursor == "" || pages > 5 {
			break
		}
	}
	if strings.Join(listed, ",") != strings.Join(mine, ",") || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", listed, pages, mine)
	}
	if _, errMsg := rpc(t, hs.URL, tok, "tasks/list", map[string]any{"cursor": "../../etc"}); !strings.Contains(errMsg, "nextCursor") {
		t.Errorf("a forged cursor: %q, want a refusal saying to send nextCursor", errMsg)
	}
}

// Expired tasks are removed from disk by the sweep, without anyone asking
// for them, and so is a task file of the first layout past its time
// (review of issue 29 item 2: files were removed only when read).
func TestTasksSweepExpired(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old := filepath.Join(dir, "0123456789abcdef0123456789abcdef.json")
	if err := os.WriteFile(old, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	_, hs := taskServer(t, e, func(o *mcpserver.Options) {
		o.TasksDir, o.TaskTTL, o.TaskSweep = dir, 5*time.Second, 50*time.Millisecond
	})
	tok := e.rt.Kernel().Authority().Mint("sweep", toolGrants, capability.Caveats{}).Encode()
	id := startTask(t, hs.URL, tok, "math_fib", map[string]any{"n": 10})
	if done := pollTask(t, hs.URL, tok, id); done["status"] != "completed" {
		t.Fatalf("the task: %v", done)
	}
	files := func() []string {
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	if f := files(); len(f) != 1 || !strings.Contains(f[0], id) {
		t.Fatalf("task files before expiry: %v, want the task's only (the old file swept at start)", f)
	}
	deadline := time.Now().Add(wait)
	for len(files()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("expired task files are still there: %v", files())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, errMsg := rpc(t, hs.URL, tok, "tasks/get", map[string]any{"taskId": id}); !strings.Contains(errMsg, "no task") {
		t.Errorf("tasks/get of an expired task: %q", errMsg)
	}
}

// twoWayTool answers n when n > 0 and spins otherwise.
const twoWayTool = `/** Answers n, or spins for n <= 0. */
export default function twoWay(args: { n: number }): number {
  let i = args.n;
  while (i <= 0) { i = i - 1; }
  return i;
}
`

// A task records the journal run its call began, and after a restart is
// answered from that very run, not from another run of the same tool by
// the same process that a match would find first (review of issue 29
// item 2: tasks were matched after a restart).
func TestTaskAfterRestartUsesItsRun(t *testing.T) {
	e := newEnv(t, host.Config{Limits: host.LimitsConfig{Timeout: host.Duration(10 * time.Minute)}})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": "tools/twoway.ts", "content": twoWayTool})); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tok := e.rt.Kernel().Authority().Mint("restart", toolGrants, capability.Caveats{}).Encode()
	first, hs := taskServer(t, e, func(o *mcpserver.Options) { o.TasksDir = dir })
	// A quick run of the same tool by the same process, just before.
	if res, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": "twoway", "arguments": map[string]any{"n": 7}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}); errMsg != "" || res["isError"] == true {
		t.Fatalf("the quick run: %v %s", res, errMsg)
	}
	id := startTask(t, hs.URL, tok, "twoway", map[string]any{"n": 0})
	var runID string
	deadline := time.Now().Add(wait)
	for runID == "" {
		runs, err := e.rt.Journal().Unfinished()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Tool == "tools/twoway.ts" {
				runID = r.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the task's run never began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a few progress ticks: the task records its run
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	hs.Close()
	_, hs2 := taskServer(t, e, func(o *mcpserver.Options) { o.TasksDir = dir })
	got, errMsg := rpc(t, hs2.URL, tok, "tasks/get", map[string]any{"taskId": id})
	if errMsg != "" || got["status"] != "failed" || !strings.Contains(mustString(got["error"]), runID) {
		t.Errorf("the task after the restart: %v %s, want failed naming its run %s", got, errMsg, runID)
	}
}

// Tasks polled, cancelled and listed from many requests at once while
// they end, and a server closed while tasks start: the store is
// synchronised (run with -race), and a task ends once: what tasks/cancel
// answered is what tasks/get answers after (review of issue 29 item 2).
func TestTaskRaces(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	srv, hs := taskServer(t, e, func(o *mcpserver.Options) { o.TasksDir = t.TempDir() })
	tok := e.rt.Kernel().Authority().Mint("racer", toolGrants, capability.Caveats{}).Encode()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := startTask(t, hs.URL, tok, "math_fib", map[string]any{"n": 20 + i})
			var cancelled map[string]any
			for range 5 {
				rpc(t, hs.URL, tok, "tasks/get", map[string]any{"taskId": id})
				rpc(t, hs.URL, tok, "tasks/list", map[string]any{})
				if i%2 == 0 && cancelled == nil {
					cancelled, _ = rpc(t, hs.URL, tok, "tasks/cancel", map[string]any{"taskId": id})
				}
			}
			end := pollTask(t, hs.URL, tok, id)
			if cancelled != nil && cancelled["status"] != end["status"] {
				t.Errorf("task %s: tasks/cancel answered %v, then tasks/get %v", id, cancelled["status"], end["status"])
			}
		}()
	}
	wg.Wait()
	// Tasks started while the server closes: each is refused or kept.
	var starts sync.WaitGroup
	for range 4 {
		starts.Add(1)
		go func() {
			defer starts.Done()
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 3}, "_meta": tasksMeta}})
			req, _ := http.NewRequest(http.MethodPost, hs.URL+mcpserver.Path, strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	starts.Wait()
}

// stdioRPC sends one request on conn and reads until its response.
func stdioRPC(t *testing.T, ctx context.Context, conn mcp.Connection, id int, method string, params any) (map[string]any, string) {
	t.Helper()
	raw, _ := json.Marshal(params)
	rid, _ := jsonrpc.MakeID(float64(id))
	if err := conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: raw}); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != rid {
			continue // a notification
		}
		if resp.Error != nil {
			return nil, resp.Error.Error()
		}
		var out map[string]any
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return out, ""
	}
}

// Issue 29 item 2: tasks over the stdio transport (Run, as agentos serve
// --mcp serves it): a 2025-11-25 client's tools/call with "task" answers a
// task, fetched with tasks/get and listed by tasks/list; a call without it
// is answered by the SDK as usual.
func TestTasksOverStdio(t *testing.T) {
	e := newEnv(t, host.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- e.srv.Run(ctx, e.rt.Agent(), st) }()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, errMsg := stdioRPC(t, ctx, conn, 1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "stdio-test", "version": "1"}}); errMsg != "" {
		t.Fatal(errMsg)
	}
	_ = conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
	created, errMsg := stdioRPC(t, ctx, conn, 2, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}, "task": map[string]any{"ttl": 60000}})
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if errMsg != "" || id == "" {
		t.Fatalf("tools/call with task over stdio: %v %s", created, errMsg)
	}
	for n := 3; ; n++ {
		got, errMsg := stdioRPC(t, ctx, conn, n, "tasks/get", map[string]any{"taskId": id})
		if errMsg != "" {
			t.Fatalf("tasks/get over stdio: %s", errMsg)
		}
		if got["status"] == "working" {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if res, _ := got["result"].(map[string]any); got["status"] != "completed" || !strings.Contains(mustString(res["content"]), `"55"`) {
			t.Fatalf("the task over stdio: %v", got)
		}
		break
	}
	list, errMsg := stdioRPC(t, ctx, conn, 100, "tasks/list", map[string]any{})
	if tasks, _ := list["tasks"].([]any); errMsg != "" || len(tasks) != 1 || tasks[0].(map[string]any)["taskId"] != id {
		t.Errorf("tasks/list over stdio: %v %s", list, errMsg)
	}
	plain, errMsg := stdioRPC(t, ctx, conn, 101, "tools/call", map[string]any{"name": "math_fib", "arguments": map[string]any{"n": 10}})
	if errMsg != "" || plain["task"] != nil || !strings.Contains(mustString(plain["content"]), `"55"`) {
		t.Errorf("a plain tools/call over stdio: %v %s", plain, errMsg)
	}
	_ = conn.Close()
	if err := <-served; err != nil {
		t.Errorf("Run: %v", err)
	}
}
