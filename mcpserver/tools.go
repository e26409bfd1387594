package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/node"
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
	for _, n := range node.ToolNames() {
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
func registeredTools(list []registry.Tool, toolsDir string) map[string]registry.Tool {
	paths := make([]string, len(list))
	for i, t := range list {
		paths[i] = t.Path
	}
	names := Names(paths, toolsDir)
	out := make(map[string]registry.Tool, len(list))
	for _, t := range list {
		out[names[t.Path]] = t
	}
	return out
}

// objectSchema is the input schema of a tool whose parameters are unknown.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// registeredTool is the MCP tool of the registered tool t.
func registeredTool(name string, t registry.Tool) *mcp.Tool {
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
func (s *Server) kernelHandler(p *kernel.Process, t node.Tool) mcp.ToolHandler {
	t = s.tokenized(t)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		switch t.Name {
		case "exec_tool":
			var a struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(args, &a) // bad arguments: the call says so
			if res := s.confirm(ctx, req, p, a.Path); res != nil {
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
func (s *Server) tokenized(t node.Tool) node.Tool {
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
func (s *Server) registeredHandler(p *kernel.Process, t registry.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
			args = json.RawMessage("{}")
		}
		if res := s.confirm(ctx, req, p, t.Path); res != nil {
			return res, nil
		}
		call, err := json.Marshal(struct {
			Path string          `json:"path"`
			Args json.RawMessage `json:"args"`
		}{t.Path, args})
		if err != nil {
			return failure(KindInvalidArgs, "the arguments must be a JSON object: "+err.Error()), nil
		}
		exec := s.tokenized(node.Tool{Name: "exec_tool", Call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
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

// confirm asks the client to confirm a run of the tool at p when its
// check_tool risk is high or critical: it returns nil when the run may go
// on, or the result to answer (the elicitation request, or a refusal).
func (s *Server) confirm(ctx context.Context, req *mcp.CallToolRequest, proc *kernel.Process, p string) *mcp.CallToolResult {
	if p == "" {
		return nil
	}
	risk, why, err := s.risk(ctx, proc, p)
	if err != nil {
		return nil // the run reports what is wrong with the tool
	}
	if !risk.AtLeast(check.RiskHigh) {
		return nil
	}
	const id = "agentos-confirm"
	if r, ok := req.Params.InputResponses[id].(*mcp.ElicitResult); ok {
		if r.Action == "accept" {
			if v, ok := r.Content["confirm"].(bool); !ok || v {
				return nil
			}
		}
		return failure(KindConfirmation, fmt.Sprintf("the run of %s (risk %s: %s) was not confirmed: the client answered %q", p, risk, why, r.Action))
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return failure(KindConfirmation, fmt.Sprintf("%s has risk %s (%s): a run must be confirmed by the user, and this client did not declare the elicitation capability; use a client that supports elicitation, or have the tool changed until check_tool rates it below high", p, risk, why))
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{id: &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("agentos: run %s? check_tool rates it %s risk: %s.", p, risk, why),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Run it","description":"Run the tool despite its risk.","default":true}},"required":["confirm"]}`),
	}}}
}

// risk is check_tool's risk of the tool at p, run as proc, and its reasons.
// A tool proc may not read counts as high: its risk cannot be known.
func (s *Server) risk(ctx context.Context, proc *kernel.Process, p string) (check.Risk, string, error) {
	args, _ := json.Marshal(map[string]string{"path": p})
	out, err := s.opts.Node.Call(ctx, proc, "check_tool", args)
	if errors.Is(err, capability.ErrDenied) {
		return check.RiskHigh, "its source cannot be read with this client's capabilities, so its risk is unknown", nil
	}
	if err != nil {
		return "", "", err
	}
	var r check.Result
	if err := json.Unmarshal(out, &r); err != nil {
		return "", "", err
	}
	var reasons []string
	for _, f := range r.Risks {
		if f.Level.AtLeast(check.RiskHigh) {
			reasons = append(reasons, f.Reason)
		}
	}
	return r.Risk, strings.Join(slices.Compact(reasons), "; "), nil
}
