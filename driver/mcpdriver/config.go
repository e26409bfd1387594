package mcpdriver

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentos-run/agentos/config"
)

// ServerConfig is one upstream MCP server of agentos.json's mcp.servers
// (docs/MCP.md): either a
// program spoken to over stdio (Command) or a streamable HTTP endpoint
// (URL). IMPORTANT: secrets never go in the file: Env and TokenEnv name
// environment variables.
type ServerConfig struct {
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
	Timeout config.Duration `json:"timeout,omitzero"`
}

// Server converts the configuration to the driver's.
func (s ServerConfig) Server() Server {
	return Server{Command: s.Command, Env: s.Env, Dir: s.Dir, URL: s.URL, TokenEnv: s.TokenEnv, Timeout: time.Duration(s.Timeout)}
}

// Servers is agentos.json's mcp.servers: the upstream MCP servers tools
// reach through the driver, by name (the <server> of
// /mcp/<server>/<tool>.ts).
type Servers map[string]ServerConfig

// Validate checks every server, in name order, naming the key that is
// wrong.
func (ss Servers) Validate() error {
	names := make([]string, 0, len(ss))
	for n := range ss {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := ss[n]
		if err := s.Server().Validate(n); err != nil {
			return fmt.Errorf("mcp.servers: %w", err)
		}
		if d := filepath.ToSlash(filepath.Clean(s.Dir)); s.Dir != "" && (filepath.IsAbs(s.Dir) || d == ".." || strings.HasPrefix(d, "../")) {
			return fmt.Errorf("mcp.servers.%s.dir %q must be a directory inside the tool root, written relative to it", n, s.Dir)
		}
	}
	return nil
}

// Drivers returns the servers as the driver's Options.Servers.
func (ss Servers) Drivers() map[string]Server {
	out := make(map[string]Server, len(ss))
	for n, s := range ss {
		out[n] = s.Server()
	}
	return out
}
