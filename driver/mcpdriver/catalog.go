package mcpdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// Tool is one tool of an upstream server, as its tools/list describes it
// (and as the cache keeps it).
type Tool struct {
	// Server is the configured server's name.
	Server string `json:"server"`
	// Name is the tool's name on the server (the file /mcp/<server>/<name>.ts).
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema are the tool's JSON Schemas as the
	// server sent them (OutputSchema may be empty).
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// Path is the tool's module path in the sandbox: /mcp/<server>/<name>.ts.
func (t Tool) Path() string { return Mount + "/" + t.Server + "/" + t.Name + ".ts" }

// Mount is where the generated modules appear in the sandbox.
const Mount = "/mcp"

// toolName is a tool name that can be a file name: others are skipped
// (logged) rather than mangled into a path.
var toolName = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// cacheFile is what <CacheDir>/<server>.json holds.
type cacheFile struct {
	Server string `json:"server"`
	Tools  []Tool `json:"tools"`
}

// Tools returns server's tools, sorted by name: from memory, else from the
// cache file, else from the live server (which also writes the cache). A
// tool list the server announced changed (notifications/tools/list_changed)
// is read again from the server.
func (c *Client) Tools(ctx context.Context, server string) ([]Tool, error) {
	s, err := c.server(server)
	if err != nil {
		return nil, err
	}
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools != nil && !s.stale.Load() {
		return s.tools, nil
	}
	if s.tools == nil && !s.stale.Load() {
		if ts, err := c.readCache(server); err == nil {
			s.tools = ts
			return ts, nil
		}
	}
	ts, err := c.refreshLocked(ctx, s)
	if err != nil && s.tools != nil {
		return s.tools, nil // announced stale, but the server is down: what we had
	}
	return ts, err
}

// retryAfter is how long Refresh waits after a server failed to list its
// tools before it tries the server again (meanwhile it answers the cache).
const retryAfter = 30 * time.Second

// Refresh reads server's tool list from the live server (at most once per
// Client unless the server announced a change; later calls answer what
// Tools does) and writes the cache. When the server cannot be reached it
// answers the cached list, if any.
func (c *Client) Refresh(ctx context.Context, server string) ([]Tool, error) {
	s, err := c.server(server)
	if err != nil {
		return nil, err
	}
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live && !s.stale.Load() {
		return s.tools, nil
	}
	var ts []Tool
	tried := false
	if wait := retryAfter - time.Since(s.failed); !s.failed.IsZero() && wait > 0 {
		// It failed a moment ago: do not make every listing and search
		// wait for an unreachable server again.
		err = fmt.Errorf("%w (server %q failed %s ago; retried after %s)", s.failure, server, time.Since(s.failed).Round(time.Millisecond), retryAfter)
	} else if ts, err = c.refreshLocked(ctx, s); err != nil {
		tried = true
		s.failed, s.failure = time.Now(), err
	} else {
		s.failed, s.failure = time.Time{}, nil
	}
	if err != nil {
		if cached, cerr := c.readCache(server); cerr == nil {
			if tried {
				c.log.Warn("mcp: the server cannot be reached; using its cached tool list", "server", server, "err", err)
			}
			s.tools = cached
			return cached, nil
		}
	}
	return ts, err
}

// refreshLocked lists s's tools live. c.closeMu (for reading) and s.mu
// MUST be held.
func (c *Client) refreshLocked(ctx context.Context, s *conn) ([]Tool, error) {
	if c.closed {
		return nil, ErrClosed
	}
	cs, err := c.session(ctx, s)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var ts []Tool
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			c.drop(s, err)
			return nil, fmt.Errorf("%w: server %q: listing its tools: %v", ErrUnavailable, s.name, err)
		}
		if !toolName().MatchString(t.Name) {
			c.log.Warn("mcp: skipping a tool whose name cannot be a file name", "server", s.name, "tool", t.Name)
			continue
		}
		ts = append(ts, toolOf(s.name, t))
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	if ts == nil {
		ts = []Tool{}
	}
	s.tools, s.live = ts, true
	s.stale.Store(false)
	if err := c.writeCache(s.name, ts); err != nil {
		c.log.Warn("mcp: writing the tool list cache (offline replays of this server's tools need it)", "server", s.name, "err", err)
	}
	return ts, nil
}

func toolOf(server string, t *mcp.Tool) Tool {
	out := Tool{Server: server, Name: t.Name, Title: t.Title, Description: t.Description}
	if t.Title == "" && t.Annotations != nil {
		out.Title = t.Annotations.Title
	}
	if t.InputSchema != nil {
		out.InputSchema, _ = json.Marshal(t.InputSchema)
	}
	if t.OutputSchema != nil {
		out.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	return out
}

// Tool returns the tool name of server (Tools, then one live refresh when
// the list does not have it).
func (c *Client) Tool(ctx context.Context, server, name string) (Tool, error) {
	ts, err := c.Tools(ctx, server)
	if err == nil {
		if t, ok := find(ts, name); ok {
			return t, nil
		}
		if ts, err = c.Refresh(ctx, server); err == nil {
			if t, ok := find(ts, name); ok {
				return t, nil
			}
		}
	}
	if err != nil {
		return Tool{}, err
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return Tool{}, fmt.Errorf("%w: server %q has no tool %q (its tools: %s)", ErrUnknownTool, server, name, orNone(names))
}

func find(ts []Tool, name string) (Tool, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

func (c *Client) cachePath(server string) string {
	return filepath.Join(c.opts.CacheDir, server+".json")
}

func (c *Client) readCache(server string) ([]Tool, error) {
	if c.opts.CacheDir == "" {
		return nil, fs.ErrNotExist
	}
	b, err := os.ReadFile(c.cachePath(server))
	if err != nil {
		return nil, err
	}
	var f cacheFile
	if err := json.Unmarshal(b, &f); err != nil {
		c.log.Warn("mcp: ignoring a corrupt tool list cache", "file", c.cachePath(server), "err", err)
		return nil, err
	}
	// IMPORTANT: the file is input like the server's answer: a name that
	// could not come from tools/list (a path, a quote, another server's
	// tool) MUST NOT reach a module path or generated code.
	if f.Server != server {
		err := fmt.Errorf("the cache file %s is for the server %q, not %q", c.cachePath(server), f.Server, server)
		c.log.Warn("mcp: ignoring a tool list cache of another server", "file", c.cachePath(server), "err", err)
		return nil, err
	}
	ts := []Tool{}
	for _, t := range f.Tools {
		if t.Server != server || !toolName().MatchString(t.Name) {
			c.log.Warn("mcp: skipping a cached tool whose name cannot be a file name", "file", c.cachePath(server), "server", t.Server, "tool", t.Name)
			continue
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// writeCache writes the cache atomically (a temporary file renamed), 0600
// in a 0700 directory.
func (c *Client) writeCache(server string, ts []Tool) error {
	if c.opts.CacheDir == "" {
		return nil
	}
	if err := os.MkdirAll(c.opts.CacheDir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cacheFile{Server: server, Tools: ts}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(c.opts.CacheDir, "."+server+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), 0o600)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), c.cachePath(server))
}

// List lists a directory of the /mcp tree, dir relative to it ("" or ".":
// the top): the servers as "<server>/", or a server's tools as
// "<server>/<tool>.ts". A server's list is refreshed live once per Client
// (Refresh), else served from the cache.
func (c *Client) List(ctx context.Context, dir string) ([]string, error) {
	dir = strings.Trim(dir, "/")
	if dir == "" || dir == "." {
		out := []string{}
		for _, n := range c.Servers() {
			out = append(out, n+"/")
		}
		return out, nil
	}
	if strings.Contains(dir, "/") {
		return nil, fmt.Errorf("%w: %s/%s is not a directory: /mcp holds servers, each holding its tools' .ts files", fs.ErrNotExist, Mount, dir)
	}
	ts, err := c.Refresh(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = dir + "/" + t.Name + ".ts"
	}
	return out, nil
}

// ReadFile returns the generated module at name, relative to /mcp
// ("<server>/<tool>.ts"; the .ts may be left out, as in a require).
func (c *Client) ReadFile(ctx context.Context, name string) ([]byte, error) {
	server, tool, err := splitModule(name)
	if err != nil {
		return nil, err
	}
	t, err := c.Tool(ctx, server, tool)
	if err != nil {
		return nil, err
	}
	return Module(t), nil
}
