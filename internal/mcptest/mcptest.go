// Package mcptest serves a real MCP server built with the official Go SDK
// for tests and examples: over streamable HTTP on loopback (ServeHTTP) or
// over stdio in a re-executed test binary (MaybeServeStdio in TestMain).
//
// Its tools:
//
//	add          {a: number, b: number} -> structuredContent {sum}
//	echo         {message: string}      -> text content "echo: <message>"
//	create_issue {title, body?, labels?} -> structuredContent {number, url}
//	fail         {reason: string}       -> isError with the reason as text
//	exit         {}                     -> the server process exits (stdio)
package mcptest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioEnv is the environment variable under which a test binary calling
// MaybeServeStdio serves the test server on stdio instead of testing.
const StdioEnv = "AGENTOS_MCPTEST_STDIO"

// Calls counts the tool calls every server of this process answered.
var Calls atomic.Int64

// AddInput is add's input.
type AddInput struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

// AddOutput is add's output.
type AddOutput struct {
	Sum float64 `json:"sum" jsonschema:"a + b"`
}

// EchoInput is echo's input.
type EchoInput struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

// IssueInput is create_issue's input.
type IssueInput struct {
	Title  string   `json:"title" jsonschema:"the issue's title"`
	Body   string   `json:"body,omitempty" jsonschema:"the issue's text, in Markdown"`
	Labels []string `json:"labels,omitempty" jsonschema:"labels to add"`
}

// IssueOutput is create_issue's output.
type IssueOutput struct {
	Number int    `json:"number" jsonschema:"the new issue's number"`
	URL    string `json:"url" jsonschema:"where the issue is"`
}

// FailInput is fail's input.
type FailInput struct {
	Reason string `json:"reason" jsonschema:"the error message the tool returns"`
}

// NewServer returns the test server.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentos-mcptest", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers and return their sum."},
		func(_ context.Context, _ *mcp.CallToolRequest, in AddInput) (*mcp.CallToolResult, AddOutput, error) {
			Calls.Add(1)
			return nil, AddOutput{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a message back as text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
			Calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Message}}}, nil, nil
		})
	n := atomic.Int64{}
	mcp.AddTool(s, &mcp.Tool{Name: "create_issue", Description: "Create an issue in the tracker.\nReturns its number and URL."},
		func(_ context.Context, _ *mcp.CallToolRequest, in IssueInput) (*mcp.CallToolResult, IssueOutput, error) {
			Calls.Add(1)
			k := n.Add(1)
			return nil, IssueOutput{Number: int(k), URL: fmt.Sprintf("https://tracker.example/issues/%d", k)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fail with the given reason (an isError result)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in FailInput) (*mcp.CallToolResult, any, error) {
			Calls.Add(1)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: in.Reason}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "Make the server process exit (tests of reconnection)."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(0)
			return nil, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "tracker://readme", Name: "readme", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "File bugs with create_issue."}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "triage", Description: "Triage an issue.", Arguments: []*mcp.PromptArgument{{Name: "title", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "Triage an issue.", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Triage the issue: " + r.Params.Arguments["title"]}}}}, nil
		})
	return s
}

// HTTPServer is the test server on streamable HTTP on 127.0.0.1.
type HTTPServer struct {
	// URL is the endpoint (http://127.0.0.1:port/mcp).
	URL string
	srv *http.Server
	ln  net.Listener
	mcp *mcp.Server
}

// ServeHTTP serves the test server on 127.0.0.1 (addr "" : a free port;
// else e.g. "127.0.0.1:43210" to come back on the same address). token,
// when set, is the bearer token every request MUST carry. Close stops it.
func ServeHTTP(addr, token string) (*HTTPServer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := NewServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	hs := &HTTPServer{URL: "http://" + ln.Addr().String() + "/mcp", srv: &http.Server{Handler: mux}, ln: ln, mcp: s}
	go func() { _ = hs.srv.Serve(ln) }()
	return hs, nil
}

// Addr is the server's address (host:port).
func (h *HTTPServer) Addr() string { return h.ln.Addr().String() }

// Close stops the server, closes its connections and ends its sessions
// (as a server that went away would).
func (h *HTTPServer) Close() error {
	err := h.srv.Close()
	for ss := range h.mcp.Sessions() {
		_ = ss.Close()
	}
	return err
}

// StartHTTP is ServeHTTP for a test: it fails t on error and closes the
// server when t ends.
func StartHTTP(t testing.TB, token string) *HTTPServer {
	t.Helper()
	h, err := ServeHTTP("", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// MaybeServeStdio serves the test server on stdin/stdout and exits when
// StdioEnv is set: call it first in TestMain, then run the test binary
// itself (os.Args[0]) with StdioEnv=1 as a stdio server.
func MaybeServeStdio() {
	if os.Getenv(StdioEnv) == "" {
		return
	}
	if err := NewServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
