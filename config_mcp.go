package agentos

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentos-run/agentos/driver/mcpdriver"
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

// MCPCacheDir is where each upstream server's tool list is cached
// (<server>.json, 0600), relative to the tool root: the generated /mcp
// modules, list_files and search_tools use it when the server is down, and
// an offline replay needs it.
var MCPCacheDir = filepath.Join(StateDir, "mcp")

// MCPServerConfig is one upstream MCP server (docs/MCP-client.md): either a
// program spoken to over stdio (Command) or a streamable HTTP endpoint
// (URL). IMPORTANT: secrets never go in the file: Env and TokenEnv name
// environment variables.
type MCPServerConfig struct {
	// Command is the stdio server's program and its arguments, e.g.
	// ["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31"].
	Command []string `json:"command,omitempty"`
	// Env names the environment variables passed to the stdio server
	// (besides PATH and HOME); their values come from agentos's
	// environment. Nothing else is passed.
	Env []string `json:"env,omitempty"`
	// Dir is the stdio server's working directory, relative to the tool
	// root (default: the tool root).
	Dir string `json:"dir,omitempty"`
	// URL is the streamable HTTP endpoint, e.g. "https://mcp.example.com/mcp".
	URL string `json:"url,omitempty"`
	// TokenEnv names the environment variable holding a bearer token sent
	// to the HTTP server. Default: no token.
	TokenEnv string `json:"token_env,omitempty"`
	// Timeout bounds connecting and one tool call. Default 30s.
	Timeout Duration `json:"timeout,omitzero"`
}

// MCPServeConfig configures `agentos serve --mcp` and `--mcp-http`.
type MCPServeConfig struct{}

// server converts the configuration to the driver's.
func (s MCPServerConfig) server() mcpdriver.Server {
	return mcpdriver.Server{Command: s.Command, Env: s.Env, Dir: s.Dir, URL: s.URL, TokenEnv: s.TokenEnv, Timeout: time.Duration(s.Timeout)}
}

// validateMCPServers checks mcp.servers (called from Config.validate).
func (c Config) validateMCPServers(path string) error {
	names := make([]string, 0, len(c.MCP.Servers))
	for n := range c.MCP.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := c.MCP.Servers[n]
		if err := s.server().Validate(n); err != nil {
			return fmt.Errorf("%s: mcp.servers: %w", path, err)
		}
		if d := filepath.ToSlash(filepath.Clean(s.Dir)); s.Dir != "" && (filepath.IsAbs(s.Dir) || d == ".." || strings.HasPrefix(d, "../")) {
			return fmt.Errorf("%s: mcp.servers.%s.dir %q must be a directory inside the tool root, written relative to it", path, n, s.Dir)
		}
	}
	return nil
}

// mcpClient returns the mcp driver over mcp.servers for the tool root at
// root (nil when none is configured), caching tool lists under
// MCPCacheDir when cache is set.
func (c Config) mcpClient(root string, cache bool) (*mcpdriver.Client, error) {
	if len(c.MCP.Servers) == 0 {
		return nil, nil
	}
	servers := map[string]mcpdriver.Server{}
	for n, s := range c.MCP.Servers {
		servers[n] = s.server()
	}
	dir := ""
	if cache {
		dir = filepath.Join(root, MCPCacheDir)
	}
	return mcpdriver.New(mcpdriver.Options{Servers: servers, Root: root, CacheDir: dir, Logger: c.Logger})
}
