package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/host"
)

const revokeTestKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// keyedToolRoot is a tool root whose tokens are signed with revokeTestKey
// (in AGENTOS_TEST_REVOKE_KEY).
func keyedToolRoot(t *testing.T) string {
	t.Helper()
	root := toolRoot(t, nil)
	cfgPath := filepath.Join(root, "agentos.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["capability"] = map[string]any{"signing_key_env": "AGENTOS_TEST_REVOKE_KEY"}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTOS_TEST_REVOKE_KEY", revokeTestKey)
	return root
}

// mintCLI runs 'agentos token --json --holder HOLDER'.
func mintCLI(t *testing.T, root, holder string) tokenReply {
	t.Helper()
	code, out, stderr := cli(t, "token", "--root", root, "--json", "--holder", holder, "--grant", "read:tools/")
	var reply tokenReply
	if code != 0 || json.Unmarshal([]byte(out), &reply) != nil || reply.ID == "" {
		t.Fatalf("token --holder %s: %d %s %s", holder, code, out, stderr)
	}
	return reply
}

// bearerStatus sends an MCP initialize with token to endpoint and returns
// the status and the error the endpoint answered.
func bearerStatus(t *testing.T, endpoint, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error
}

// TestTokenRevoke: a token 'agentos token' minted is refused by 'serve
// --mcp-http' as a bearer token after 'agentos token revoke' (offline, or
// through the serving node), also after the node restarts; a holder's
// revocation kills every token minted for it, and a new one works; an
// unknown id is refused, saying so; 'token list' shows what is revoked.
func TestTokenRevoke(t *testing.T) {
	root := keyedToolRoot(t)
	ci := mintCLI(t, root, "ci")
	alice1, alice2 := mintCLI(t, root, "alice"), mintCLI(t, root, "alice")
	other := mintCLI(t, root, "other")

	code, _, stderr := cli(t, "token", "revoke", "--root", root, "0123456789abcdef01234567")
	if code == 0 || !strings.Contains(stderr, "no token with id 0123456789abcdef01234567") || !strings.Contains(stderr, "--force") {
		t.Fatalf("revoke of an unknown id: %d %s", code, stderr)
	}
	code, out, stderr := cli(t, "token", "revoke", "--root", root, ci.ID) // offline
	if code != 0 || !strings.Contains(out, ci.ID) {
		t.Fatalf("revoke %s offline: %d %s %s", ci.ID, code, out, stderr)
	}

	env := "AGENTOS_TEST_REVOKE_KEY=" + revokeTestKey
	endpoint, stop := serveHTTP(t, root, env)
	if code, msg := bearerStatus(t, endpoint, ci.Token); code != http.StatusUnauthorized || !strings.Contains(msg, "revoked") {
		t.Fatalf("a token revoked offline, on the node started after: %d %q", code, msg)
	}
	if code, msg := bearerStatus(t, endpoint, alice1.Token); code != http.StatusOK {
		t.Fatalf("alice's token before her revocation: %d %q", code, msg)
	}
	code, out, stderr = cli(t, "token", "revoke", "--root", root, "--json", "alice") // through the node
	var rep host.RevokeReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Holder != "alice" || !rep.Node || !rep.Durable {
		t.Fatalf("revoke alice through the node: %d %s %s", code, out, stderr)
	}
	for _, tok := range []tokenReply{alice1, alice2} {
		if code, msg := bearerStatus(t, endpoint, tok.Token); code != http.StatusUnauthorized || !strings.Contains(msg, "revoked") {
			t.Errorf("alice's token %s after her revocation, on the serving node: %d %q", tok.ID, code, msg)
		}
	}
	alice3 := mintCLI(t, root, "alice")
	if code, msg := bearerStatus(t, endpoint, alice3.Token); code != http.StatusOK {
		t.Errorf("a token minted for alice after her revocation: %d %q", code, msg)
	}
	code, out, _ = cli(t, "token", "list", "--root", root, "--json")
	var list tokenList
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("token list --json: %d %s", code, out)
	}
	revoked := map[string]bool{}
	for _, m := range list.Tokens {
		revoked[m.ID] = m.Revoked
	}
	want := map[string]bool{ci.ID: true, alice1.ID: true, alice2.ID: true, alice3.ID: false, other.ID: false}
	for id, w := range want {
		if got, ok := revoked[id]; !ok || got != w {
			t.Errorf("token list: %s revoked=%v (listed %v), want %v\n%s", id, got, ok, w, out)
		}
	}

	// Restarted, the node still refuses them.
	stop()
	endpoint, _ = serveHTTP(t, root, env)
	for _, tok := range []tokenReply{ci, alice1} {
		if code, msg := bearerStatus(t, endpoint, tok.Token); code != http.StatusUnauthorized || !strings.Contains(msg, "revoked") {
			t.Errorf("token %s after the node restarted: %d %q", tok.ID, code, msg)
		}
	}
	if code, msg := bearerStatus(t, endpoint, other.Token); code != http.StatusOK {
		t.Errorf("a token never revoked, after the restart: %d %q", code, msg)
	}
}

// serveHTTP is startServeHTTP that can also be stopped (and waited for)
// before the test ends.
func serveHTTP(t *testing.T, root string, env ...string) (endpoint string, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--root", root, "--mcp-http", "127.0.0.1:0")
	cmd.Env = append(append(os.Environ(), "AGENTOS_CLI_CHILD=1"), env...)
	var errOut lockedBuffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if !done {
			done = true
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := mcpURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		waitListening(t, root, mcpWait)
		return u, stop
	case <-time.After(mcpWait):
		t.Fatalf("serve --mcp-http did not print its endpoint:\n%s", errOut.String())
		return "", stop
	}
}
