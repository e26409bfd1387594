package kerneltools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/toolmeta"
)

// The MCP servers' tools as files (docs/MCP.md): list_files and
// read_file serve the generated modules under /mcp (mcpdriver.Mount), and
// search_tools ranks the MCP tools with the registered ones. Only what the
// process may call is shown: a tool needs the mcp right on
// "<server>/<tool>", a server any mcp grant reaching into it.

// isMCPPath reports whether p names /mcp or a path under it.
func isMCPPath(p string) bool {
	return p == mcpdriver.Mount || p == mcpdriver.Mount+"/" || strings.HasPrefix(p, mcpdriver.Mount+"/")
}

// mcpNotConfigured is the error of a /mcp path on a node with no MCP
// server.
var errMCPNotConfigured = errors.New("no MCP server is configured for this node (mcp.servers in agentos.json), so /mcp is empty")

// mcpServerVisible reports whether p holds an mcp grant reaching into
// server: any server (scope ""), the server ("github", "github/") or one
// of its tools ("github/create_issue").
func mcpServerVisible(p *kernel.Process, server string) bool {
	tok, ok := p.Token()
	if !ok {
		return false
	}
	return slices.ContainsFunc(tok.Grants, func(g capability.Grant) bool { return g.Reaches(capability.MCP, server) })
}

// listMCP lists /mcp (the servers p may reach, as /mcp/<server>/) or
// /mcp/<server> (the tools p may call, as /mcp/<server>/<tool>.ts).
func (n *Node) listMCP(ctx context.Context, p *kernel.Process, dir string) ([]string, error) {
	if n.opts.MCP == nil {
		return nil, errMCPNotConfigured
	}
	rel := strings.Trim(strings.TrimPrefix(dir, mcpdriver.Mount), "/")
	if rel == "" {
		if !hasRight(p, capability.MCP) {
			return nil, p.Check(capability.MCP, "")
		}
		p.CountCall()
		out := []string{}
		for _, s := range n.opts.MCP.Servers() {
			if mcpServerVisible(p, s) {
				out = append(out, mcpdriver.Mount+"/"+s+"/")
			}
		}
		return out, nil
	}
	if strings.Contains(rel, "/") {
		return nil, fmt.Errorf("%s is not a directory: /mcp holds one directory per server, each holding its tools' .ts files", dir)
	}
	if !mcpServerVisible(p, rel) {
		return nil, p.Check(capability.MCP, rel+"/")
	}
	p.CountCall()
	names, err := n.opts.MCP.List(ctx, rel)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, name := range names {
		tool := strings.TrimSuffix(strings.TrimPrefix(name, rel+"/"), ".ts")
		if p.Covers(capability.MCP, rel+"/"+tool) {
			out = append(out, mcpdriver.Mount+"/"+name)
		}
	}
	return out, nil
}

// readMCP returns the generated module at path (/mcp/<server>/<tool>.ts)
// when p may call that tool.
func (n *Node) readMCP(ctx context.Context, p *kernel.Process, path string) (string, error) {
	if n.opts.MCP == nil {
		return "", errMCPNotConfigured
	}
	rel := strings.Trim(strings.TrimPrefix(path, mcpdriver.Mount), "/")
	server, tool, ok := strings.Cut(rel, "/")
	if !ok || strings.Contains(tool, "/") {
		return "", fmt.Errorf("%s is not a tool module: read /mcp/<server>/<tool>.ts (list_files('/mcp') shows the servers)", path)
	}
	tool = strings.TrimSuffix(tool, ".ts")
	if err := permit(p, capability.MCP, server+"/"+tool); err != nil {
		return "", err
	}
	src, err := n.opts.MCP.ReadFile(ctx, server+"/"+tool+".ts")
	return string(src), err
}

// searchMCP ranks the MCP tools p may call for query, scored like the
// registry's search (toolmeta.Index), so that both lists merge by score.
// Servers that are down are searched in their cached tool lists; one with
// neither is left out. IMPORTANT: only the servers p reaches are read (and
// so possibly started), as for list_files.
func (n *Node) searchMCP(ctx context.Context, p *kernel.Process, query string, limit int) []SearchHit {
	if n.opts.MCP == nil || !hasRight(p, capability.MCP) {
		return nil
	}
	var (
		tools []mcpdriver.Tool
		errs  []error
	)
	for _, s := range n.opts.MCP.Servers() {
		if !mcpServerVisible(p, s) {
			continue
		}
		ts, err := n.opts.MCP.Refresh(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tools = append(tools, ts...)
	}
	if err := errors.Join(errs...); err != nil {
		n.opts.Logger.Warn("search_tools: some MCP servers could not be searched", "err", err)
	}
	idx := toolmeta.NewIndex(mcpdriver.Mount)
	for _, t := range tools {
		if p.Covers(capability.MCP, t.Server+"/"+t.Name) {
			idx.Put(RegistryTool(t))
		}
	}
	return idx.Search(query, limit)
}

// RegistryTool is an MCP tool as a search_tools result: its module path,
// name, description, inputSchema as parameters, and the tags "mcp" and its
// server.
func RegistryTool(t mcpdriver.Tool) registry.Tool {
	desc := t.Description
	if t.Title != "" && t.Title != t.Name {
		desc = strings.TrimSpace(t.Title + ". " + desc)
	}
	return registry.Tool{Path: t.Path(), Name: t.Name, Description: desc, Parameters: t.InputSchema, Tags: []string{"mcp", strings.ToLower(t.Server)}, Version: 1}
}

// hasRight reports whether p holds right on anything.
func hasRight(p *kernel.Process, right capability.Right) bool {
	tok, ok := p.Token()
	if !ok {
		return false
	}
	return slices.ContainsFunc(tok.Grants, func(g capability.Grant) bool { return g.Right == right })
}
