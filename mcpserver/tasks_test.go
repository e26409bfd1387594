package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/capability"
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
