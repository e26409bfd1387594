package mcpdriver

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentos-run/agentos/driver"
)

// Right is the capability right a caller needs on "<server>/<tool>" to call
// a tool, and to see or read its module under /mcp (capability.MCP).
const Right = Name

// For implements driver.GuardedMount: /mcp as a caller holding r sees it,
// as the kernel's list_files and read_file show it (node/mcp.go):
//
//   - /mcp lists only the servers r reaches (an mcp grant on every server,
//     on the server, or on one of its tools); nothing is started for it;
//   - /mcp/<server> is refused unless r reaches the server, and then lists
//     only the tools r covers; only then may the server be started to
//     read its tool list;
//   - /mcp/<server>/<tool>.ts (read or required) needs the mcp right on
//     "<server>/<tool>" (r.Allow), checked before anything is read.
func (c *Client) For(r driver.CallerRights) driver.Mount { return view{c: c, r: r} }

type view struct {
	c *Client
	r driver.CallerRights
}

var _ driver.GuardedMount = (*Client)(nil)

func (v view) List(ctx context.Context, dir string) ([]string, error) {
	dir = strings.Trim(dir, "/")
	if dir == "" || dir == "." {
		out := []string{}
		for _, n := range v.c.Servers() {
			if v.r.Reaches(Right, n) {
				out = append(out, n+"/")
			}
		}
		return out, nil
	}
	if strings.Contains(dir, "/") {
		return v.c.List(ctx, dir) // not a directory: the client says so
	}
	if !v.r.Reaches(Right, dir) {
		// Allow reports (and counts) the refusal in the caller's own
		// words for what is missing.
		if err := v.r.Allow(Right, dir+"/"); err != nil {
			return nil, driver.Errorf(driver.CodeSecurity, "list_files %s/%s refused: %v", Mount, dir, err)
		}
	}
	names, err := v.c.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, n := range names {
		tool := strings.TrimSuffix(strings.TrimPrefix(n, dir+"/"), ".ts")
		if v.r.Covers(Right, dir+"/"+tool) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (v view) ReadFile(ctx context.Context, name string) ([]byte, error) {
	server, tool, err := splitModule(name)
	if err != nil {
		return nil, err
	}
	if err := v.r.Allow(Right, server+"/"+tool); err != nil {
		return nil, driver.Errorf(driver.CodeSecurity, "reading %s/%s/%s.ts refused: %v", Mount, server, tool, err)
	}
	return v.c.ReadFile(ctx, name)
}

// splitModule splits a module's name under /mcp ("<server>/<tool>.ts", the
// .ts optional) into its server and tool.
func splitModule(name string) (server, tool string, err error) {
	server, tool, ok := strings.Cut(strings.Trim(name, "/"), "/")
	if !ok || server == "" || tool == "" || strings.Contains(tool, "/") {
		return "", "", fmt.Errorf("%w: %s/%s is not a tool module: modules are %s/<server>/<tool>.ts", fs.ErrNotExist, Mount, strings.Trim(name, "/"), Mount)
	}
	return server, strings.TrimSuffix(tool, ".ts"), nil
}

// NamedModule returns the module at name ("<server>/<tool>.ts" under /mcp,
// the .ts optional) made from the two names alone, with no tool list: its
// types are the generic ones (an object in, the content array out). Its
// run-time JavaScript is Module's for the same names (Module depends on
// nothing else at run time), so a run made again from the journal (a
// replay, a recovery) runs the code it recorded while no server is asked
// and none need be configured. The names MUST be valid as a configured
// server's and as a listed tool's; others are refused (fs.ErrNotExist),
// so that nothing but a name reaches the generated code.
func NamedModule(name string) ([]byte, error) {
	server, tool, err := splitModule(name)
	if err != nil {
		return nil, err
	}
	if !serverName().MatchString(server) || !toolName().MatchString(tool) {
		return nil, fmt.Errorf("%w: %s/%s/%s.ts cannot be a generated module: a server's name is letters, digits, '_', '-' or '.', a tool's too", fs.ErrNotExist, Mount, server, tool)
	}
	return Module(Tool{Server: server, Name: tool}), nil
}
