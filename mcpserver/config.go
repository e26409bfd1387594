package mcpserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentos-run/agentos/config"
)

// Config is agentos.json's mcp.serve: how `agentos serve --mcp` and
// `--mcp-http` serve the node's tools (docs/MCP.md). The zero value: no HTTP endpoint unless the flag
// asks, and every HTTP request needs a capability token.
type Config struct {
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
	// shutdown. Default 10s (DefaultBodyTimeout).
	BodyTimeout config.Duration `json:"body_timeout,omitzero"`
}

// DefaultBodyTimeout is mcp.serve.body_timeout's default.
const DefaultBodyTimeout = 10 * time.Second

// BodyTimeoutOrDefault returns BodyTimeout, or its default when unset.
func (c Config) BodyTimeoutOrDefault() time.Duration {
	if c.BodyTimeout > 0 {
		return time.Duration(c.BodyTimeout)
	}
	return DefaultBodyTimeout
}

// CheckAddr checks addr, the address MCP over HTTP is served at (HTTPAddr
// or the --mcp-http flag), against the settings: a host:port, and a
// loopback host when AllowAnonymous is set.
func (c Config) CheckAddr(addr string) error {
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

// Validate checks the section, naming the key that is wrong.
func (c Config) Validate() error {
	if c.HTTPAddr == "" {
		return nil
	}
	return c.CheckAddr(c.HTTPAddr)
}
