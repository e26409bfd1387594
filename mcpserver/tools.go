package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/kerneltool"
)

// MetaPath is the key, in a registered tool's _meta, of its path in the
// tool root (what exec_tool runs).
const MetaPath = "agentos/path"

// maxNameBytes bounds a registered tool's MCP name before its hash suffix,
// well under MCP's 128 characters.
const maxNameBytes = 64

// ToolName is the MCP name of the registered tool at p (a path in the tool
// root, e.g. tools/math/fib.ts), toolsDir the tools directory: p under
// toolsDir without its extension, each "/" replaced by "_" and every
// character outside [A-Za-z0-9_-] by "-" (tools/math/fib.ts: math_fib,
// tools/text/slug.v2.ts: text_slug-v2). It is the name before collisions
// are settled: see Names.
func ToolName(p, toolsDir string) string {
	rel := strings.TrimPrefix(p, strings.TrimSuffix(toolsDir, "/")+"/")
	rel = strings.TrimSuffix(rel, path.Ext(rel))
	var b strings.Builder
	for _, r := range rel {
		switch {
		case r == '/':
			b.WriteByte('_')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Names returns the MCP name of each path (the registered tools' paths),
// ToolName's unless that name is a kernel tool's, is shared by another
// path, or is longer than 64 bytes: then it is ToolName's (cut to 55
// bytes) followed by "_" and the first 8 hex digits of the SHA-256 of the
// path (tools/list_files.ts: list_files_1a2b3c4d). A name therefore
// changes only when a tool whose name collides with it appears or goes.
func Names(paths []string, toolsDir string) map[string]string {
	base := make(map[string]string, len(paths))
	count := map[string]int{}
	for _, n := range kerneltool.Names() {
		count[n]++
	}
	for _, p := range paths {
		b := ToolName(p, toolsDir)
		base[p] = b
		count[b]++
	}
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		b := base[p]
		if count[b] == 1 && len(b) <= maxNameBytes && b != "" {
			out[p] = b
			continue
		}
		sum := sha256.Sum256([]byte(p))
		out[p] = b[:min(len(b), maxNameBytes-9)] + "_" + hex.EncodeToString(sum[:4])
	}
	return out
}

// registeredTools is the registered tools by MCP name.
func registeredTools(list []toolmeta.Tool, toolsDir string) map[string]toolmeta.Tool {
	paths := make([]string, len(list))
	for i, t := range list {
		paths[i] = t.Path
	}
	names := Names(paths, toolsDir)
	out := make(map[string]toolmeta.Tool, len(list))
	for _, t := range list {
		out[names[t.Path]] = t
	}
	return out
}

// objectSchema is the input schema of a tool whose parameters are unknown.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// registeredTool is the MCP tool of the registered tool t.
func registeredTool(name string, t toolmeta.Tool) *mcp.Tool {
	schema := objectSchema
	var probe struct {
		Type string `json:"type"`
	}
	if len(t.Parameters) > 0 && json.Unmarshal(t.Parameters, &probe) == nil && probe.Type == "object" {
		schema = t.Parameters
	}
	desc := t.Description
	if desc == "" {
		desc = "The registered tool " + t.Path + " (no JSDoc description)."
	}
	return &mcp.Tool{
		Name: name, Title: t.Path, Description: desc, InputSchema: schema,
		Meta: mcp.Meta{MetaPath: t.Path, "agentos/version": t.Version, "agentos/hash": t.Hash},
	}
}

// kernelHandler runs the kernel tool t as p.
func (s *Server) kernelHandler(p proc.Process, t kerneltool.Tool) mcp.ToolHandler {
	t = s.tokenized(t)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		switch t.Name {
		case "exec_tool":
			var a struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(args, &a) // bad arguments: the call says so
			ctx, res := s.confirm(ctx, req, p, a.Path)
			if res != nil {
				return res, nil
			}
			return s.long(ctx, req, "exec_tool "+a.Path, func(ctx context.Context) *mcp.CallToolResult {
				out, err := t.Call(ctx, args)
				return execResultOf(out, err, false)
			}), nil
		case "forge_tool":
			return s.long(ctx, req, "forge_tool", func(ctx context.Context) *mcp.CallToolResult {
				out, err := t.Call(ctx, args)
				return plainResult(out, err)
			}), nil
		default:
			out, err := t.Call(ctx, args)
			return plainResult(out, err), nil
		}
	}
}

// tokenized is t whose results and errors are tokenized on their way to
// the client (Options.PII), through the one door from the kernel tools to
// a model, agent.CallTool.
func (s *Server) tokenized(t kerneltool.Tool) kerneltool.Tool {
	if s.opts.PII == nil {
		return t
	}
	call := t
	t.Call = func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		return agent.CallTool(ctx, call, args, s.opts.PII)
	}
	return t
}

// registeredHandler runs the registered tool t as p: exec_tool of its
// path with the call's arguments.
func (s *Server) registeredHandler(p proc.Process, t toolmeta.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
			args = json.RawMessage("{}")
		}
		ctx, res := s.confirm(ctx, req, p, t.Path)
		if res != nil {
			return res, nil
		}
		call, err := json.Marshal(struct {
			Path string          `json:"path"`
			Args json.RawMessage `json:"args"`
		}{t.Path, args})
		if err != nil {
			return failure(KindInvalidArgs, "the arguments must be a JSON object: "+err.Error()), nil
		}
		exec := s.tokenized(kerneltool.Tool{Name: "exec_tool", Call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			return s.opts.Node.Call(ctx, p, "exec_tool", args)
		}})
		return s.long(ctx, req, t.Path, func(ctx context.Context) *mcp.CallToolResult {
			out, err := exec.Call(ctx, call)
			return execResultOf(out, err, true)
		}), nil
	}
}

// long runs fn, reporting progress while it runs when the request carries
// a progress token: at the start, every ProgressInterval, and at the end.
func (s *Server) long(ctx context.Context, req *mcp.CallToolRequest, what string, fn func(context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	token := req.Params.GetProgressToken()
	if token == nil {
		return fn(ctx)
	}
	notify := func(progress, total float64, msg string) {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: msg}); err != nil {
			s.log.Debug("mcp: a progress notification was not sent", "what", what, "err", err)
		}
	}
	notify(0, 0, what+": started")
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- fn(ctx) }()
	tick := time.NewTicker(s.opts.ProgressInterval)
	defer tick.Stop()
	start := time.Now()
	n := 0.0
	for {
		select {
		case res := <-done:
			n++
			notify(n, n, fmt.Sprintf("%s: done after %s", what, time.Since(start).Round(time.Millisecond)))
			return res
		case <-tick.C:
			n++
			notify(n, 0, fmt.Sprintf("%s: running for %s", what, time.Since(start).Round(time.Second)))
		}
	}
}
