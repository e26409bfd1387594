package pii

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentos-run/agentos/driver"
)

// Drivers with a scope syntax.
const (
	fetchDriver = "fetch"
	mcpDriver   = "mcp"
)

// Scope is one restore_to entry: a driver whose requests get the real
// values back, possibly narrowed.
//
//	sql                                 the sql driver (tgp.exec_sql, the kernel tool exec_sql)
//	fetch                               every fetch
//	fetch:https://crm.example.com/v1/   fetches of URLs under that prefix (fetch.allow's rules)
//	mcp                                 every MCP tool
//	mcp:crm                             the tools of the MCP server "crm"
//	mcp:crm/send_email                  that one tool
//	<driver>                            any other driver, whole
//
// The built-in fs, clock and random drivers and the model (llm) can never
// be named: they are not data drivers, and the model never sees real
// values.
type Scope struct {
	// Driver is the driver's name.
	Driver string
	// URLPrefix narrows fetch.
	URLPrefix string
	// Server and Tool narrow mcp (Tool empty: every tool of Server).
	Server, Tool string
}

// String returns the entry as written in restore_to.
func (s Scope) String() string {
	switch {
	case s.URLPrefix != "":
		return s.Driver + ":" + s.URLPrefix
	case s.Tool != "":
		return s.Driver + ":" + s.Server + "/" + s.Tool
	case s.Server != "":
		return s.Driver + ":" + s.Server
	}
	return s.Driver
}

// ParseScope reads one restore_to entry (see Scope).
func ParseScope(s string) (Scope, error) {
	name, scope, scoped := strings.Cut(strings.TrimSpace(s), ":")
	if name == "" || strings.ContainsAny(name, " /\t") {
		return Scope{}, fmt.Errorf("%w: restore_to entry %q: write a driver name (sql, fetch, mcp, ...), optionally with a scope (fetch:https://host/path/, mcp:server or mcp:server/tool)", ErrConfig, s)
	}
	switch name {
	case driver.FSDriver, driver.ClockDriver, driver.RandomDriver:
		return Scope{}, fmt.Errorf("%w: restore_to entry %q: %s is a built-in driver, never tokenized, so it has nothing to restore", ErrConfig, s, name)
	case "llm":
		return Scope{}, fmt.Errorf("%w: restore_to entry %q: the model never receives real values; that is the point of pii", ErrConfig, s)
	}
	if !scoped {
		return Scope{Driver: name}, nil
	}
	return parseScoped(s, name, scope)
}

// parseScoped reads the scope of the restore_to entry s of the driver
// name: a URL prefix for fetch, a server or server/tool for mcp.
func parseScoped(s, name, scope string) (Scope, error) {
	switch name {
	case fetchDriver:
		if _, err := driver.CanonicalURL(scope); err != nil || !(strings.HasPrefix(scope, "http://") || strings.HasPrefix(scope, "https://")) {
			return Scope{}, fmt.Errorf("%w: restore_to entry %q: the scope of fetch is a URL prefix such as https://crm.example.com/v1/", ErrConfig, s)
		}
		return Scope{Driver: name, URLPrefix: scope}, nil
	case mcpDriver:
		srv, tool, _ := strings.Cut(scope, "/")
		if srv == "" || strings.Contains(tool, "/") {
			return Scope{}, fmt.Errorf("%w: restore_to entry %q: the scope of mcp is a server name or server/tool, e.g. mcp:crm or mcp:crm/send_email", ErrConfig, s)
		}
		return Scope{Driver: name, Server: srv, Tool: tool}, nil
	}
	return Scope{}, fmt.Errorf("%w: restore_to entry %q: only fetch (a URL prefix) and mcp (server or server/tool) take a scope; write %q for the whole driver", ErrConfig, s, name)
}

// allows reports whether the scope covers a request to drv.
func (s Scope) allows(drv string, req json.RawMessage) bool {
	if s.Driver != drv {
		return false
	}
	switch {
	case s.URLPrefix != "":
		var r struct {
			URL string `json:"url"`
		}
		return json.Unmarshal(req, &r) == nil && driver.Allowed([]string{s.URLPrefix}, r.URL)
	case s.Server != "":
		var r struct {
			Server string `json:"server"`
			Tool   string `json:"tool"`
		}
		return json.Unmarshal(req, &r) == nil && r.Server == s.Server && (s.Tool == "" || r.Tool == s.Tool)
	}
	return true
}

// Restores reports whether a request to the driver drv gets the real
// values back: whether a restore_to entry covers it. The decision is made
// on the request as written (with its tokens).
func (t *Tokenizer) Restores(drv string, req json.RawMessage) bool {
	if t == nil {
		return false
	}
	for _, s := range t.restore {
		if s.allows(drv, req) {
			return true
		}
	}
	return false
}
