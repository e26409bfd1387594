package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
)

// httpConnect opens an SDK client session on hs as token (""; anonymous).
func httpConnect(ctx context.Context, hs *httptest.Server, token string) (*mcp.ClientSession, error) {
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: bearer{token}}
	}
	// Sessions are the protocol of 2025-11-25 and older clients.
	return mcp.NewClient(&mcp.Implementation{Name: "sec", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.Path, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// useSession sends tools/list on the session sid as token ("": none) and
// returns the HTTP status.
func useSession(t *testing.T, hs *httptest.Server, sid, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+mcpserver.Path, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPSessionOwnershipRace: many sessions opened at once, half with
// tokens, half anonymous: no session accepts a request of another owner
// (another token, or none), however the initializes interleaved.
func TestHTTPSessionOwnershipRace(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: e.rt.Agent(), MaxSessions: -1}))
	t.Cleanup(hs.Close)
	grants := []capability.Grant{{Right: capability.Read, Scope: "tools/"}}
	var toks []string
	for i := range 4 {
		toks = append(toks, e.rt.Kernel().Authority().Mint(fmt.Sprint("race-", i), grants, capability.Caveats{}).Encode())
	}
	const n = 80
	type opened struct {
		sid, token string
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sess []opened
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := ""
			if i%2 == 0 {
				token = toks[(i/2)%len(toks)]
			}
			cs, err := httpConnect(context.Background(), hs, token)
			if err != nil {
				t.Errorf("initialize %d: %v", i, err)
				return
			}
			t.Cleanup(func() { cs.Close() })
			mu.Lock()
			sess = append(sess, opened{cs.ID(), token})
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(sess) != n {
		t.Fatalf("%d sessions opened, want %d", len(sess), n)
	}
	for _, s := range sess {
		if s.sid == "" {
			t.Fatal("a session without Mcp-Session-Id: nothing to check")
		}
		if got := useSession(t, hs, s.sid, s.token); got != http.StatusOK {
			t.Errorf("the owner on its session: %d, want 200", got)
		}
		intruders := []string{""} // anonymous
		for _, tok := range toks {
			if tok != s.token {
				intruders = append(intruders, tok)
			}
		}
		for _, other := range intruders {
			if other == s.token {
				continue
			}
			if got := useSession(t, hs, s.sid, other); got != http.StatusForbidden {
				t.Errorf("session of %.12q used by %.12q: %d, want 403", s.token, other, got)
			}
		}
	}
}

// TestHTTPOneUseToken: a token's process holds no more than the token: a
// one-use token passes one check (its first call), refuses the second,
// and its process, once ended, is not replaced by one with fresh uses.
func TestHTTPOneUseToken(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": samples.FibPath, "content": samples.FibTool})); err != nil {
		t.Fatal(err)
	}
	tok := e.rt.Kernel().Authority().Mint("one-use", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{MaxUses: 1})
	cs, err := httpConnect(context.Background(), hs, tok.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := mustOK(t, "read_file", call(t, cs, "read_file", map[string]any{"path": samples.FibPath})); !strings.Contains(got, "fib") {
		t.Errorf("first read_file = %.80q", got)
	}
	res := call(t, cs, "read_file", map[string]any{"path": samples.FibPath})
	if !res.IsError || !strings.Contains(text(res), "used up") {
		t.Errorf("second call of a one-use token: %v %s, want refused as used up", res.IsError, text(res))
	}
	for _, p := range e.rt.Kernel().PS() {
		if p.Image == "mcp" {
			if err := e.rt.Kernel().Kill(p.PID, "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cs2, err := httpConnect(context.Background(), hs, tok.Encode()); err == nil {
		defer cs2.Close()
		if res, err := cs2.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": samples.FibPath}}); err == nil && !res.IsError {
			t.Error("a one-use token got a new process with fresh uses after its process ended")
		}
	}
}

// TestHTTPSessionCap: a token holds at most MaxSessions sessions. Issue 25
// item 13: most clients never close theirs, so at the limit the least
// recently used idle session is closed to admit the new one (its id is
// then unknown, 404); the bound stays hard: when each session has a
// request under way, the new one is refused 429.
func TestHTTPSessionCap(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{MaxSessions: 2}))
	t.Cleanup(hs.Close)
	tok := e.rt.Kernel().Authority().Mint("capped", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{}).Encode()
	connect := func() *mcp.ClientSession {
		t.Helper()
		cs, err := httpConnect(context.Background(), hs, tok)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	s0, s1 := connect(), connect()
	if code := useSession(t, hs, s0.ID(), tok); code != http.StatusOK {
		t.Fatalf("tools/list on the first session: %d", code)
	}
	s2 := connect() // s1 is the least recently used
	if code := useSession(t, hs, s1.ID(), tok); code != http.StatusNotFound {
		t.Errorf("the least recently used session answered %d after a third was opened, want 404 (closed)", code)
	}
	if code := useSession(t, hs, s0.ID(), tok); code != http.StatusOK {
		t.Errorf("a recently used session answered %d, want 200 (kept)", code)
	}

	// Both sessions busy: a request under way on each (its body still
	// arriving).
	var pipes []*io.PipeWriter
	for _, cs := range []*mcp.ClientSession{s0, s2} {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		t.Cleanup(func() { pw.Close() }) // before hs.Close, which waits for the request
		req, _ := http.NewRequest(http.MethodPost, hs.URL+mcpserver.Path, pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Authorization", "Bearer "+tok)
		go func() {
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		if _, err := pw.Write([]byte(`{"jsonrpc":"2.0",`)); err != nil {
			t.Fatal(err)
		}
	}
	// The handler counts a request as under way once it starts: wait for
	// both (the body's first bytes written says only the client sent them).
	for deadline := time.Now().Add(30 * time.Second); mcpserver.ActiveRequests(e.srv, s0.ID()) == 0 || mcpserver.ActiveRequests(e.srv, s2.ID()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the two requests were not under way on the server after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if cs, err := httpConnect(context.Background(), hs, tok); err == nil {
		cs.Close()
		t.Fatal("a third session was opened while both of a token limited to 2 had a request under way")
	} else if !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "Too Many") {
		t.Errorf("the third session was refused with %v, want 429", err)
	}
	for _, pw := range pipes {
		_, _ = pw.Write([]byte(`"id":7,"method":"tools/list","params":{}}`))
		pw.Close()
	}
	// Another token is not limited by this one's sessions.
	other := e.rt.Kernel().Authority().Mint("other", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{}).Encode()
	if cs, err := httpConnect(context.Background(), hs, other); err != nil {
		t.Errorf("another token's session: %v", err)
	} else {
		cs.Close()
	}
}

// TestHTTPSessionTimeout: an idle session is closed; its id is then
// unknown (404) and the client must initialize again.
func TestHTTPSessionTimeout(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: e.rt.Agent(), SessionTimeout: 50 * time.Millisecond}))
	t.Cleanup(hs.Close)
	cs, err := httpConnect(context.Background(), hs, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	sid := cs.ID()
	// Requests keep a session alive: wait for the client to see it closed
	// (its SSE stream ends and cannot resume), sending nothing meanwhile.
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case <-ended:
	case <-time.After(wait):
		t.Fatal("an idle session was never closed")
	}
	if got := useSession(t, hs, sid, ""); got != http.StatusNotFound {
		t.Errorf("the timed-out session: %d, want 404", got)
	}
}

// TestHTTPNoNameSquatting: a process that took the name mcp-<token id>
// without the token's grants is not adopted for the token.
func TestHTTPNoNameSquatting(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	k := e.rt.Kernel()
	tok := k.Authority().Mint("reader", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{})
	squatter, err := k.Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil },
		kernel.SpawnOptions{Name: "mcp-" + tok.ID, Image: "squatter", Grants: []capability.Grant{{Right: capability.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Kill(squatter.PID(), "test") })
	cs, err := httpConnect(context.Background(), hs, tok.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res := call(t, cs, "write_file", map[string]any{"path": "tools/x.ts", "content": "x"})
	if !res.IsError || !strings.HasPrefix(text(res), mcpserver.KindDenied+": ") {
		t.Errorf("write_file with a read-only token, a writer squatting its process name: %v %s, want denied", res.IsError, text(res))
	}
	var mcpProcs int
	for _, p := range k.PS() {
		if p.Image == "mcp" {
			mcpProcs++
		}
	}
	if mcpProcs != 1 {
		t.Errorf("%d mcp processes, want the token's own", mcpProcs)
	}
}
