package host

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
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

// MCPServerConfig is one upstream MCP server (docs/MCP.md): either a
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
	// to the HTTP server, to its URL's origin only; with a plain http://
	// URL, only to a loopback host. Default: no token.
	TokenEnv string `json:"token_env,omitempty"`
	// Timeout bounds connecting and one tool call. Default 30s.
	Timeout Duration `json:"timeout,omitzero"`
}

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

// MCPServeConfig configures `agentos serve --mcp` and `--mcp-http`
// (docs/MCP.md). The zero value: no HTTP endpoint unless the flag
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
	// BodyTimeout bounds reading one HTTP request's body: a client that
	// has not sent its whole body by then is answered 408 and its
	// connection closed, so slow bodies hold no connection, handler or
	// shutdown. Default 10s (DefaultMCPBodyTimeout).
	BodyTimeout Duration `json:"body_timeout,omitzero"`
}

// DefaultMCPBodyTimeout is mcp.serve.body_timeout's default.
const DefaultMCPBodyTimeout = 10 * time.Second

// BodyTimeoutOrDefault returns BodyTimeout, or its default when unset.
func (c MCPServeConfig) BodyTimeoutOrDefault() time.Duration {
	if c.BodyTimeout > 0 {
		return time.Duration(c.BodyTimeout)
	}
	return DefaultMCPBodyTimeout
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
