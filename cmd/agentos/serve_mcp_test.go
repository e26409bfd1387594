package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/kerneltools"
)

// mcpWait bounds every wait of the MCP tests for the serving process.
const mcpWait = time.Minute

// serveMCPCmd is 'agentos serve --mcp' (this test binary in command mode)
// for root; its stderr goes to errOut.
func serveMCPCmd(root string, errOut *lockedBuffer, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--mcp", "--root", root}, extra...)...)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
	cmd.Stderr = errOut
	return cmd
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpWait)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", name, err)
	}
	return res
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mcpOK(t *testing.T, name string, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s failed: %s", name, mcpText(res))
	}
	return mcpText(res)
}

func mcpTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

// TestServeMCPStdio drives a real 'agentos serve --mcp' with the Go SDK's
// client over stdio: initialize, the kernel tools (a call of each), a
// failing call, list_changed after a write then a call of the new tool,
// while the admin socket serves 'agentos ps'; closing stdin stops the node
// cleanly, and nothing but the protocol went to stdout.
func TestServeMCPStdio(t *testing.T) {
	root := toolRoot(t, nil)
	var errOut lockedBuffer
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cmd := serveMCPCmd(root, &errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 5*mcpWait)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: mcpWait}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errOut.String())
	}
	if cs.InitializeResult().ServerInfo.Name != "agentos" {
		t.Errorf("server info %+v", cs.InitializeResult().ServerInfo)
	}
	listed := mcpTools(t, cs)
	for _, name := range kerneltools.ToolNames() {
		if listed[name] == nil {
			t.Fatalf("tools/list lacks %s", name)
		}
	}
	mcpOK(t, "write_file", mcpCall(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	if got := mcpOK(t, "read_file", mcpCall(t, cs, "read_file", map[string]any{"path": samples.FibPath})); got != samples.FibTool {
		t.Errorf("read_file = %q", got)
	}
	mcpOK(t, "list_files", mcpCall(t, cs, "list_files", map[string]any{"dir": "tools"}))
	mcpOK(t, "patch_file", mcpCall(t, cs, "patch_file", map[string]any{"path": samples.FibPath, "search": "Returns", "replace": "Computes"}))
	mcpOK(t, "check_tool", mcpCall(t, cs, "check_tool", map[string]any{"path": samples.FibPath}))
	mcpOK(t, "search_tools", mcpCall(t, cs, "search_tools", map[string]any{"query": "fibonacci"}))
	if got := mcpOK(t, "exec_tool", mcpCall(t, cs, "exec_tool", map[string]any{"path": samples.FibPath, "args": map[string]any{"n": 10}})); !strings.Contains(got, `"result":55`) {
		t.Errorf("exec_tool = %s", got)
	}
	mcpCall(t, cs, "exec_sql", map[string]any{"sql": "SELECT 1"}) // ok or isError: never a protocol error
	mcpOK(t, "remember", mcpCall(t, cs, "remember", map[string]any{"text": "Over MCP too.", "tags": []string{"mcp"}}))
	if got := mcpOK(t, "recall", mcpCall(t, cs, "recall", map[string]any{"query": "over mcp"})); !strings.Contains(got, "Over MCP too.") {
		t.Errorf("recall = %s", got)
	}
	mcpOK(t, "forget", mcpCall(t, cs, "forget", map[string]any{"id": "1"}))
	if res := mcpCall(t, cs, "forge_tool", map[string]any{"spec": "add two numbers"}); !res.IsError {
		t.Errorf("forge_tool without a model succeeded: %s", mcpText(res))
	}
	if res := mcpCall(t, cs, "read_file", map[string]any{"path": "tools/none.ts"}); !res.IsError || !strings.Contains(mcpText(res), "tools/none.ts") {
		t.Errorf("a failing call: %v %s", res.IsError, mcpText(res))
	}
	// The new tool: list_changed, then listed, then called by its name.
	mcpOK(t, "write_file", mcpCall(t, cs, "write_file", map[string]any{"path": "tools/text/shout.ts", "content": "/** Upper-cases a text. */\nexport default function shout(args: { s: string }): { loud: string } {\n  return { loud: args.s.toUpperCase() };\n}\n"}))
	deadline := time.After(mcpWait)
	for mcpTools(t, cs)["text_shout"] == nil {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no list_changed brought text_shout")
		}
	}
	res := mcpCall(t, cs, "text_shout", map[string]any{"s": "hi"})
	mcpOK(t, "text_shout", res)
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"loud":"HI"}` {
		t.Errorf("text_shout structuredContent = %s", b)
	}
	// The admin socket serves the same node meanwhile.
	if code, out, stderr := cli(t, "ps", "--root", root); code != 0 || !strings.Contains(out, "agent") {
		t.Errorf("agentos ps while serving MCP: %d %s %s", code, out, stderr)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "agentos node stopped cleanly") {
		t.Errorf("the node did not stop cleanly when stdin closed:\n%s", errOut.String())
	}
	if _, err := admin.Dial(root); err == nil {
		t.Error("the admin socket is still up after the MCP client left")
	}
}

var mcpURL = regexp.MustCompile(`MCP over streamable HTTP at (http://\S+)`)

// startServeHTTP runs 'agentos serve --mcp-http 127.0.0.1:0' and returns
// its MCP endpoint.
func startServeHTTP(t *testing.T, root string, env ...string) string {
	t.Helper()
	u, _ := startServeHTTPCmd(t, root, env...)
	return u
}

// startServeHTTPCmd is startServeHTTP, returning the process too.
func startServeHTTPCmd(t *testing.T, root string, env ...string) (string, *exec.Cmd) {
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
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
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
		return u, cmd
	case <-time.After(mcpWait):
		t.Fatalf("serve --mcp-http did not print its endpoint:\n%s", errOut.String())
		return "", nil
	}
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCPHTTP: without a signing key, serve --mcp-http refuses a
// request without a token (401, saying what to do) and serves one with the
// token it wrote to .agentos/mcp-token.
func TestServeMCPHTTP(t *testing.T) {
	root := toolRoot(t, nil)
	endpoint := startServeHTTP(t, root)
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body.Error, "Bearer") {
		t.Fatalf("no token: %d %q", resp.StatusCode, body.Error)
	}
	tok, err := os.ReadFile(filepath.Join(root, MCPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, MCPTokenFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file is %v, want 0600", fi.Mode().Perm())
	}
	hc := &http.Client{Transport: bearerRT{strings.TrimSpace(string(tok))}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mcpOK(t, "write_file", mcpCall(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	if got := mcpOK(t, "exec_tool", mcpCall(t, cs, "exec_tool", map[string]any{"path": samples.FibPath, "args": map[string]any{"n": 10}})); !strings.Contains(got, `"result":55`) {
		t.Errorf("exec_tool over HTTP = %s", got)
	}
}

// TestTokenCommand: 'agentos token' mints, with the configured signing
// key, a token 'serve --mcp-http' accepts, scoped to its grants; without a
// key it refuses, saying what to set.
func TestTokenCommand(t *testing.T) {
	root := toolRoot(t, nil)
	if code, _, stderr := cli(t, "token", "--root", root); code != 2 || !strings.Contains(stderr, "signing_key_env") {
		t.Fatalf("token without a key: %d %s", code, stderr)
	}
	cfgPath := filepath.Join(root, "agentos.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["capability"] = map[string]any{"signing_key_env": "AGENTOS_TEST_MCP_KEY"}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	t.Setenv("AGENTOS_TEST_MCP_KEY", key)
	code, out, stderr := cli(t, "token", "--root", root, "--json", "--grant", "read:tools/", "--grant", "exec:tools/", "--ttl", "1h")
	if code != 0 {
		t.Fatalf("token: %d %s", code, stderr)
	}
	var reply tokenReply
	if err := json.Unmarshal([]byte(out), &reply); err != nil || reply.Token == "" || len(reply.Grants) != 2 || reply.Expires.IsZero() {
		t.Fatalf("token --json = %s (%v)", out, err)
	}
	endpoint := startServeHTTP(t, root, "AGENTOS_TEST_MCP_KEY="+key)
	hc := &http.Client{Transport: bearerRT{reply.Token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "token-test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mcpOK(t, "list_files", mcpCall(t, cs, "list_files", map[string]any{"dir": "tools"}))
	if res := mcpCall(t, cs, "write_file", map[string]any{"path": "tools/x.ts", "content": "x"}); !res.IsError || !strings.HasPrefix(mcpText(res), "denied: ") {
		t.Errorf("write_file with a read/exec token: %v %s", res.IsError, mcpText(res))
	}
	if code, _, stderr := cli(t, "token", "--root", root, "--grant", "root:all"); code != 2 || !strings.Contains(stderr, "unknown right") {
		t.Errorf("--grant root: %d %s", code, stderr)
	}
}

// TestServeMCPBridge: on a root an 'agentos serve' already serves,
// 'serve --mcp' bridges the stdio client to that node's socket: the tools
// run there, a tool written through the bridge appears live, and the node
// keeps serving when the client leaves.
func TestServeMCPBridge(t *testing.T) {
	root := toolRoot(t, nil)
	startServe(t, root, t.TempDir(), fmt.Sprint(time.Now().UnixNano()))
	var errOut lockedBuffer
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*mcpWait)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serveMCPCmd(root, &errOut), TerminateDuration: mcpWait}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "bridging MCP") {
		t.Errorf("serve --mcp on a served root did not say it bridges:\n%s", errOut.String())
	}
	if mcpTools(t, cs)["exec_tool"] == nil {
		t.Fatal("no kernel tools through the bridge")
	}
	mcpOK(t, "write_file", mcpCall(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	deadline := time.After(mcpWait)
	for mcpTools(t, cs)["math_fib"] == nil {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no list_changed brought math_fib through the bridge")
		}
	}
	if got := mcpOK(t, "math_fib", mcpCall(t, cs, "math_fib", map[string]any{"n": 10})); got != "55" {
		t.Errorf("math_fib through the bridge = %q", got)
	}
	// The run is in the serving node's journal.
	if code, out, stderr := cli(t, "runs", "--root", root); code != 0 || !strings.Contains(out, samples.FibPath) {
		t.Errorf("runs on the serving node: %d %s %s", code, out, stderr)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, errOut.String())
	}
	if !nodeServes(root) {
		t.Error("the serving node stopped when the bridged client left")
	}
}

// TestServeMCPBridgeOwnerStops: when the node a 'serve --mcp' bridges to
// stops (the first window quits), the bridge takes over: it starts its own
// node on the root, the client keeps its session and its tools, and the
// new node serves the socket for the next window.
func TestServeMCPBridgeOwnerStops(t *testing.T) {
	root := toolRoot(t, nil)
	owner, _ := startServe(t, root, t.TempDir(), fmt.Sprint(time.Now().UnixNano()))
	var errOut lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*mcpWait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bridge-owner", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: serveMCPCmd(root, &errOut), TerminateDuration: mcpWait}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errOut.String())
	}
	if mcpTools(t, cs)["exec_tool"] == nil {
		t.Fatal("no kernel tools through the bridge")
	}
	mcpOK(t, "write_file", mcpCall(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	// The client has the new tool (announced through the bridge)...
	listed := time.Now().Add(mcpWait)
	for mcpTools(t, cs)["math_fib"] == nil {
		if time.Now().After(listed) {
			t.Fatalf("math_fib was never listed through the bridge\n%s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ...when the node serving the root stops.
	if err := owner.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	// The same session keeps working once the bridge has taken over; while
	// it switches, a call fails (an error result, or "unknown tool" while
	// the tools are relisted) and is retried.
	deadline := time.Now().Add(mcpWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), mcpWait)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "math_fib", Arguments: map[string]any{"n": 10}})
		cancel()
		if err == nil && !res.IsError {
			if got := mcpOK(t, "math_fib", res); got != "55" {
				t.Errorf("math_fib after the takeover = %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			why := fmt.Sprint(err)
			if err == nil {
				why = mcpText(res)
			}
			t.Fatalf("the bridged client lost its tools when the serving node stopped: %s\n%s", why, errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(errOut.String(), "now runs its own node") {
		t.Errorf("the bridge did not say it took over:\n%s", errOut.String())
	}
	if !nodeServes(root) {
		t.Error("the taking-over node does not serve the root's socket")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, errOut.String())
	}
	if nodeServes(root) {
		t.Error("the taking-over node still serves after its client left")
	}
}
