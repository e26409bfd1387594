package mcpserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
)

// A tool whose write_file returned is callable at once over MCP, as a
// task and as a plain call, and listed by tools/list: the server does not
// wait for its registry watch to catch up (found in CI: a tools/call right
// after a write met the tool list of before the write).
func TestAWrittenToolIsServedAtOnce(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	defer hs.Close()
	grants := []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}
	tok := e.rt.Kernel().Authority().Mint("catchup", grants, capability.Caveats{}).Encode()
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	tasks := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcpserver.TasksExtension: map[string]any{}}}}
	for i := range 12 {
		path := fmt.Sprintf("tools/math/fib%d.ts", i)
		name := fmt.Sprintf("math_fib%d", i)
		if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": path, "content": samples.FibTool})); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			listed, errMsg := rpc(t, hs.URL, tok, "tools/list", map[string]any{"_meta": meta})
			if errMsg != "" || !strings.Contains(fmt.Sprint(listed["tools"]), name) {
				t.Fatalf("tools/list right after writing %s: %s, %s missing from %v", path, errMsg, name, listed)
			}
			continue
		}
		m := meta
		if i%3 == 1 {
			m = tasks
		}
		res, errMsg := rpc(t, hs.URL, tok, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"n": 10}, "_meta": m})
		if errMsg != "" {
			t.Fatalf("tools/call %s right after writing it: %s", name, errMsg)
		}
		if i%3 == 1 && res["resultType"] != "task" {
			t.Fatalf("tools/call %s with the tasks extension right after writing it answered %v, want a task", name, res)
		}
		if i%3 == 2 && !strings.Contains(mustString(res["content"]), "55") {
			t.Fatalf("tools/call %s right after writing it: %v", name, res)
		}
	}
}
