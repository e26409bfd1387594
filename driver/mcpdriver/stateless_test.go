package mcpdriver_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/mcptest"
)

// Issue 29 item 2 (consume): a configured MCP server that speaks the
// 2026-07-28 specification without sessions (stateless streamable HTTP:
// no initialize, no Mcp-Session-Id) is called as any other: every request
// carries the 2026-07-28 protocol version and none a session id.
func TestStatelessServer2026(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var versions, sessions []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		versions = append(versions, r.Header.Get("Mcp-Protocol-Version"))
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			sessions = append(sessions, sid)
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the client's Close (cleanups run last first)
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"modern": {URL: srv.URL}}})
	for range 2 {
		if out, err := call(t, c, "modern", "add", `{"a": 2, "b": 40}`); err != nil || string(out) != `{"sum":42}` {
			t.Fatalf("add on a stateless 2026-07-28 server: %s %v", out, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sessions) > 0 {
		t.Errorf("session ids sent to a stateless server: %v", sessions)
	}
	for _, v := range versions {
		if v != "2026-07-28" {
			t.Errorf("protocol versions sent: %v, want 2026-07-28 on each request", versions)
			break
		}
	}
}
