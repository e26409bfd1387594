package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
)

// roundRobin sends each request to the next of urls, as a load balancer
// without affinity does.
type roundRobin struct {
	urls  []string
	token string
	n     atomic.Int64
	hosts []string // the server each request went to, in order
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(rr.n.Add(1)-1) % len(rr.urls)
	r = r.Clone(r.Context())
	r.URL.Host = strings.TrimPrefix(rr.urls[i], "http://")
	r.Host = r.URL.Host
	r.Header.Set("Authorization", "Bearer "+rr.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 29 item 2: a client of MCP 2026-07-28 talks to the node without a
// session (no initialize, no Mcp-Session-Id), so that two nodes behind a
// load balancer without affinity answer its requests in turn; a client of
// 2025-11-25 still opens a session (negotiated down); a request without a
// session id is answered whole on its own.
func TestHTTPStateless(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	// A second Server of the node's tools: a second front, as another
	// node of the cluster is.
	other, err := mcpserver.New(mcpserver.Options{Node: e.rt.Node(), Registry: e.rt.Node().RegistryClient(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	defer a.Close()
	b := httptest.NewServer(other.HTTPHandler(mcpserver.HTTPOptions{}))
	defer b.Close()
	tok := e.rt.Kernel().Authority().Mint("lb", []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}, capability.Caveats{})

	rr := &roundRobin{urls: []string{a.URL, b.URL}, token: tok.Encode()}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lb", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://lb" + mcpserver.Path, HTTPClient: &http.Client{Transport: rr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
		t.Fatalf("a 2026-07-28 client: protocol %q, session %q; want 2026-07-28 without a session", v, cs.ID())
	}
	for i := range 4 {
		if got := mustOK(t, "math_fib", call(t, cs, "math_fib", map[string]any{"n": 10})); got != "55" {
			t.Fatalf("call %d through the balancer: %q", i, got)
		}
	}
	if rr.n.Load() < 5 {
		t.Errorf("%d requests went through the balancer, want each call on its own", rr.n.Load())
	}

	// An older client negotiates down and keeps a session.
	old, err := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: a.URL + mcpserver.Path, HTTPClient: &http.Client{Transport: bearer{tok.Encode()}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if v := old.InitializeResult().ProtocolVersion; v != "2025-11-25" || old.ID() == "" {
		t.Errorf("a 2025-11-25 client: protocol %q, session %q; want 2025-11-25 with a session", v, old.ID())
	}
	if got := mustOK(t, "math_fib", call(t, old, "math_fib", map[string]any{"n": 10})); got != "55" {
		t.Errorf("the older client's call: %q", got)
	}

	// Two bare requests, no initialize, no session id: each answered.
	for i, srv := range []*httptest.Server{a, b} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpserver.Path, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"math_fib","arguments":{"n":10}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok.Encode())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw := readSSE(t, resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(raw, `"text":"55"`) {
			t.Errorf("bare request %d: %d session %q body %s", i, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), raw)
		}
	}
}

// readSSE returns the JSON-RPC message of resp (an event stream or JSON).
func readSSE(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil || strings.Contains(b.String(), `"id":7`) {
			break
		}
	}
	out := b.String()
	if i := strings.Index(out, "data: "); i >= 0 {
		out = strings.TrimSpace(out[i+len("data: "):])
		if j := strings.IndexByte(out, '\n'); j >= 0 {
			out = out[:j]
		}
	}
	var probe json.RawMessage
	if json.Unmarshal([]byte(out), &probe) != nil {
		t.Logf("not one JSON message: %q", out)
	}
	return out
}
