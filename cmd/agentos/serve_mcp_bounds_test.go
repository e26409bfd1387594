package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/host"
)

// setBodyTimeout writes mcp.serve.body_timeout into root's agentos.json.
func setBodyTimeout(t *testing.T, root, d string) {
	t.Helper()
	p := filepath.Join(root, host.ConfigFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["mcp"] = map[string]any{"serve": map[string]any{"body_timeout": d}}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// slowBodies opens n connections to endpoint that each send a valid
// token and headers promising a body, and one byte of it.
func slowBodies(t *testing.T, endpoint, token string, n int) []net.Conn {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", u.Path, u.Host, token)
		conns = append(conns, c)
	}
	return conns
}

// Issue 25 item 7: 200 slow bodies with a valid token were held for the
// whole test, and serve then ignored SIGTERM for over 3 s. Each slow body
// is now answered 408 once mcp.serve.body_timeout has passed, and a
// SIGTERM with slow bodies in flight ends serve promptly.
func TestServeMCPHTTPSlowBodiesCutOff(t *testing.T) {
	root := toolRoot(t, nil)
	setBodyTimeout(t, root, "1s")
	endpoint, cmd := startServeHTTPCmd(t, root)
	tok, err := os.ReadFile(filepath.Join(root, MCPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))

	start := time.Now()
	conns := slowBodies(t, endpoint, token, 100)
	var wg sync.WaitGroup
	statuses := make([]string, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				statuses[i] = "no answer: " + err.Error()
				return
			}
			resp.Body.Close()
			statuses[i] = resp.Status
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, s := range statuses {
		if !strings.HasPrefix(s, "408") {
			t.Fatalf("slow body %d was answered %q, want 408 Request Timeout", i, s)
		}
	}
	if took > 8*time.Second {
		t.Errorf("the slow bodies were cut off after %v, want about the 1s body_timeout", took)
	}

	// A SIGTERM with 100 slow bodies in flight.
	slowBodies(t, endpoint, token, 100)
	time.Sleep(200 * time.Millisecond)
	start = time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("serve took %v to end after SIGTERM, want under 3s", took)
		}
		t.Logf("serve ended %v after SIGTERM with 100 slow bodies in flight", time.Since(start))
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve did not end within 15s of SIGTERM with slow bodies in flight")
	}
}
