package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
)

// mcpRPC posts one JSON-RPC request of MCP 2026-07-28 (no session, no
// token: the node allows anonymous clients) to endpoint and returns its
// result, or its error's message.
func mcpRPC(t *testing.T, endpoint, method string, params map[string]any) (map[string]any, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msg struct {
		Result map[string]any            `json:"result"`
		Error  *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
	}
	if msg.Error != nil {
		return nil, msg.Error.Message
	}
	return msg.Result, ""
}

// allowAnonymous sets mcp.serve.allow_anonymous in root's agentos.json.
func allowAnonymous(t *testing.T, root string) {
	t.Helper()
	p := filepath.Join(root, "agentos.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["mcp"] = map[string]any{"serve": map[string]any{"allow_anonymous": true}}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 29 item 2: an MCP client starts a forge as a task, the node
// restarts in the middle of it (the model has been asked, not answered),
// and the client fetches the forge's result from the restarted node: the
// task is kept on disk, the node resumes the journaled forge at start, and
// tasks/get answers from the journal.
func TestServeMCPTaskSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agentos serve twice")
	}
	submit, _ := json.Marshal(map[string]string{"path": samples.FibPath, "code": samples.FibForged, "tests": samples.FibForgedTests})
	asked, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	model := llmtest.NewResponder(func(llmtest.Received) llmtest.Step {
		if n.Add(1) == 1 {
			close(asked)
			<-release // the first node stops before it answers
		}
		return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "1", Name: "submit_tool", Arguments: string(submit)}}}
	})
	defer model.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	root := toolRoot(t, nil)
	allowAnonymous(t, root)
	env := []string{"AGENTOS_LLM_BASE_URL=" + model.URL(), "AGENTOS_LLM_MODEL=scripted"}

	first, cmd := startServeHTTPCmd(t, root, env...)
	meta := map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcpserver.TasksExtension: map[string]any{}}}}
	created, errMsg := mcpRPC(t, first, "tools/call", map[string]any{"name": "forge_tool", "arguments": map[string]any{"spec": "a tool that returns the n-th Fibonacci number"}, "_meta": meta})
	if errMsg != "" || created["resultType"] != "task" {
		t.Fatalf("forge_tool as a task: %v %s", created, errMsg)
	}
	id, _ := created["taskId"].(string)
	select {
	case <-asked:
	case <-time.After(mcpWait):
		t.Fatal("the forge never asked the model")
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	close(release)

	second, _ := startServeHTTPCmd(t, root, env...)
	deadline := time.Now().Add(mcpWait)
	for {
		got, errMsg := mcpRPC(t, second, "tasks/get", map[string]any{"taskId": id})
		if errMsg != "" {
			t.Fatalf("tasks/get after the restart: %s", errMsg)
		}
		if got["status"] != "working" {
			res, _ := got["result"].(map[string]any)
			b, _ := json.Marshal(res)
			if got["status"] != "completed" || !strings.Contains(string(b), samples.FibPath) || res["isError"] == true {
				t.Fatalf("the forge task after the restart: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task is still working after the restart: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n.Load() != 2 {
		t.Errorf("the model was asked %d times, want twice (once per node: the first answer never arrived)", n.Load())
	}
}
