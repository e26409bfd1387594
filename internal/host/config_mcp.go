package host

import (
	"path/filepath"

	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/mcpserver"
)

// MCPConfig is MCP both ways (docs/MCP.md): the MCP servers whose tools a
// sandboxed tool calls as code (/mcp/<server>/<tool>.ts), and how
// `agentos serve --mcp` / `--mcp-http` serves this node's tools.
type MCPConfig struct {
	// Servers are the MCP servers tools reach through the mcp driver, by
	// name (the <server> of /mcp/<server>/<tool>.ts). Default: none.
	Servers mcpdriver.Servers `json:"servers,omitempty"`
	// Serve configures agentos as an MCP server.
	Serve mcpserver.Config `json:"serve,omitzero"`
}

// MCPCacheDir is where each upstream server's tool list is cached
// (<server>.json, 0600), relative to the tool root: the generated /mcp
// modules, list_files and search_tools use it when the server is down, and
// an offline replay needs it.
var MCPCacheDir = filepath.Join(StateDir, "mcp")

// DefaultMCPBodyTimeout is mcp.serve.body_timeout's default.
const DefaultMCPBodyTimeout = mcpserver.DefaultBodyTimeout

// mcpClient returns the mcp driver over mcp.servers for the tool root at
// root (nil when none is configured), caching tool lists under
// MCPCacheDir when cache is set.
func (c Config) mcpClient(root string, cache bool) (*mcpdriver.Client, error) {
	if len(c.MCP.Servers) == 0 {
		return nil, nil
	}
	servers := c.MCP.Servers.Drivers()
	dir := ""
	if cache {
		dir = filepath.Join(root, MCPCacheDir)
	}
	return mcpdriver.New(mcpdriver.Options{Servers: servers, Root: root, CacheDir: dir, Logger: c.Logger})
}
