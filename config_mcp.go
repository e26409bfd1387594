package agentos

import (
	"fmt"
	"strconv"
	"strings"
)

// MCPConfig is MCP both ways (docs/MCP.md): the MCP servers whose tools a
// sandboxed tool calls as code (/mcp/<server>/<tool>.ts), and how
// `agentos serve --mcp` / `--mcp-http` serves this node's tools.
type MCPConfig struct {
	// Servers are the MCP servers tools reach through the mcp driver, by
	// name (the <server> of /mcp/<server>/<tool>.ts). Default: none.
	Servers map[string]MCPServerConfig `json:"servers,omitempty"`
	// Serve configures agentos as an MCP server.
	Serve MCPServeConfig `json:"serve,omitzero"`
}

// MCPServerConfig is one upstream MCP server.
type MCPServerConfig struct{}

// MCPServeConfig configures `agentos serve --mcp` and `--mcp-http`
// (docs/MCP-server.md). The zero value: no HTTP endpoint unless the flag
// asks, and every HTTP request needs a capability token.
type MCPServeConfig struct {
	// HTTPAddr, when set (e.g. "127.0.0.1:8765"), makes `agentos serve`
	// serve MCP over streamable HTTP at http://ADDR/mcp beside the admin
	// socket; `--mcp-http ADDR` overrides it. Default: none.
	HTTPAddr string `json:"http_addr,omitempty"`
	// AllowAnonymous lets an HTTP request without a bearer token run as the
	// default process. IMPORTANT: only on a loopback address (127.0.0.1,
	// ::1, localhost): anyone who can connect gets the default process's
	// rights. Default false: such a request is answered 401.
	AllowAnonymous bool `json:"allow_anonymous,omitempty"`
}

// CheckAddr checks addr, the address MCP over HTTP is served at (HTTPAddr
// or the --mcp-http flag), against the settings: a host:port, and a
// loopback host when AllowAnonymous is set.
func (c MCPServeConfig) CheckAddr(addr string) error {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return fmt.Errorf("mcp.serve.http_addr %q is not host:port: write e.g. \"127.0.0.1:8765\"", addr)
	}
	host, port := strings.Trim(addr[:i], "[]"), addr[i+1:]
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("mcp.serve.http_addr %q: the port %q is not a port number (0: a free port)", addr, port)
	}
	if c.AllowAnonymous && host != "127.0.0.1" && host != "::1" && host != "localhost" {
		return fmt.Errorf("mcp.serve.allow_anonymous serves the default process to anyone who connects, so MCP over HTTP must then listen on loopback (127.0.0.1:PORT), not %q; use capability tokens ('agentos token') to serve other hosts", addr)
	}
	return nil
}

// validate checks the mcp.serve settings.
func (c MCPServeConfig) validate(path string) error {
	if c.HTTPAddr == "" {
		return nil
	}
	if err := c.CheckAddr(c.HTTPAddr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
