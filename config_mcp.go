package agentos

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

// MCPServeConfig configures `agentos serve --mcp` and `--mcp-http`.
type MCPServeConfig struct{}
