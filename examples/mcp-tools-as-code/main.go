// Command mcp-tools-as-code shows MCP servers as code (docs/MCP.md):
// an MCP server built with the official Go SDK serves an issue tracker on
// loopback (streamable HTTP); agentos is configured to use it
// (mcp.servers.tracker); the agent discovers its tools as files
// (list_files /mcp, search_tools, read_file of the generated module); a
// tool that requires /mcp/tracker/create_issue runs through exec_tool,
// calls the server through the journaled mcp driver and catches an isError
// result; then the server is stopped and the run replays offline with the
// same result.
//
//	go run ./examples/mcp-tools-as-code
//
// It exits 1 if any step does not behave as described.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// triage is the tool the agent writes: it calls two MCP tools as
// functions, typed by their generated modules.
const triage = `import createIssue from "/mcp/tracker/create_issue";
import closeIssue from "/mcp/tracker/close_issue";

/** Files a bug in the tracker, then tries to close an issue that does not exist. */
export default async function (a: { title: string }): Promise<string> {
  const issue = await createIssue({ title: a.title, labels: ["bug"] });
  let note = "";
  try {
    await closeIssue({ number: issue.number + 100 });
  } catch (e) {
    note = (e as { code: string }).code + ": " + (e as Error).message;
  }
  return "filed #" + issue.number + " (" + issue.url + "); " + note;
}
`

type issueIn struct {
	Title  string   `json:"title" jsonschema:"the issue's title"`
	Labels []string `json:"labels,omitempty" jsonschema:"labels to add, e.g. bug"`
}

type issueOut struct {
	Number int    `json:"number" jsonschema:"the new issue's number"`
	URL    string `json:"url" jsonschema:"where the issue is"`
}

type closeIn struct {
	Number int `json:"number" jsonschema:"the number of the issue to close"`
}

// tracker is the upstream MCP server: an in-memory issue tracker.
func tracker() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1.0.0"}, nil)
	issues := 0
	mcp.AddTool(s, &mcp.Tool{Name: "create_issue", Description: "Create an issue in the tracker. Returns its number and URL."},
		func(_ context.Context, _ *mcp.CallToolRequest, in issueIn) (*mcp.CallToolResult, issueOut, error) {
			issues++
			return nil, issueOut{Number: issues, URL: fmt.Sprintf("https://tracker.example/issues/%d", issues)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "close_issue", Description: "Close an open issue of the tracker by its number."},
		func(_ context.Context, _ *mcp.CallToolRequest, in closeIn) (*mcp.CallToolResult, any, error) {
			if in.Number > issues {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("no issue #%d", in.Number)}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil, nil
		})
	return s
}

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: MCP tools called as code, discovered as files, replayed offline")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-mcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	// The upstream MCP server, on loopback.
	server := tracker()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		_ = srv.Close()
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
	}
	defer stop()

	// agentos, configured as agentos.json's "mcp": {"servers": {"tracker": {"url": ...}}} would.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := host.Config{Root: root, Logger: quiet,
		MCP: host.MCPConfig{Servers: map[string]host.MCPServerConfig{"tracker": {URL: "http://" + ln.Addr().String() + "/mcp"}}}}
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close() }()
	tools, err := rt.Tools()
	if err != nil {
		return err
	}
	call := func(name string, args any) (json.RawMessage, error) {
		b, _ := json.Marshal(args)
		for _, t := range tools {
			if t.Name == name {
				return t.Call(ctx, b)
			}
		}
		return nil, fmt.Errorf("no kernel tool %s", name)
	}

	// Discovery, one level at a time.
	out, err := call("list_files", map[string]string{"dir": "/mcp"})
	if err != nil {
		return err
	}
	fmt.Printf("list_files /mcp          -> %s\n", out)
	if out, err = call("list_files", map[string]string{"dir": "/mcp/tracker"}); err != nil {
		return err
	}
	fmt.Printf("list_files /mcp/tracker  -> %s\n", out)
	if out, err = call("search_tools", map[string]any{"query": "create an issue", "limit": 1}); err != nil {
		return err
	}
	var hits []kerneltools.SearchHit
	if err := json.Unmarshal(out, &hits); err != nil || len(hits) == 0 || hits[0].Path != "/mcp/tracker/create_issue.ts" {
		return fmt.Errorf("search_tools: %s %v", out, err)
	}
	fmt.Printf("search_tools             -> %s (score %.2f)\n", hits[0].Path, hits[0].Score)
	if out, err = call("read_file", map[string]string{"path": hits[0].Path}); err != nil {
		return err
	}
	var src string
	_ = json.Unmarshal(out, &src)
	fmt.Println("read_file " + hits[0].Path + ":")
	for _, l := range strings.Split(strings.TrimSpace(src), "\n") {
		fmt.Println("    " + l)
	}

	// The agent writes a tool calling the MCP tools as code, and runs it.
	if _, err := call("write_file", map[string]string{"path": "tools/triage.ts", "content": triage}); err != nil {
		return err
	}
	if out, err = call("exec_tool", map[string]any{"path": "tools/triage.ts", "args": map[string]string{"title": "login fails"}}); err != nil {
		return err
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(out, &res); err != nil {
		return err
	}
	const want = `"filed #1 (https://tracker.example/issues/1); mcp_tool_error: tracker/close_issue: no issue #101"`
	if !res.Success || string(res.Result.Result) != want {
		return fmt.Errorf("exec_tool tools/triage.ts: %s %+v", res.Result.Result, res.Result.Error)
	}
	fmt.Printf("exec_tool tools/triage.ts -> %s\n", res.Result.Result)

	// The server goes away; the run replays from the journal.
	stop()
	rep, err := executor.Replay(ctx, rt.Executor(), rt.Journal(), res.RunID, nil)
	if err != nil {
		return err
	}
	if !rep.Same || string(rep.Result.Result) != want {
		return fmt.Errorf("offline replay: same=%v result %s divergence %v", rep.Same, rep.Result.Result, rep.Divergence)
	}
	fmt.Printf("replay with the server stopped -> %s, same as recorded: %v\n", rep.Result.Result, rep.Same)
	return nil
}
