package mcpdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/lazyre"
)

// Name is the driver's name in a driver.Call (and the capability right
// that gates it).
const Name = "mcp"

// DefaultTimeout bounds connecting to a server and one call when
// Server.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Server is one upstream MCP server. Exactly one of Command (a stdio
// server) and URL (a streamable HTTP server) MUST be set.
type Server struct {
	// Command is the program and its arguments, e.g. ["npx", "-y",
	// "@modelcontextprotocol/server-everything@2026.8.31"]. The program is
	// looked up in PATH.
	Command []string
	// Env names the environment variables passed to a stdio server, besides
	// PATH and HOME: the values come from this process's environment,
	// never from the configuration. Nothing else of the environment is
	// passed.
	Env []string
	// Dir is the stdio server's working directory ("": the tool root).
	Dir string
	// URL is a streamable HTTP server's endpoint, e.g.
	// "https://mcp.example.com/mcp".
	URL string
	// TokenEnv names the environment variable holding a bearer token sent
	// to an HTTP server (Authorization: Bearer ...); "": none.
	TokenEnv string
	// Timeout bounds connecting and one call (0: DefaultTimeout).
	Timeout time.Duration
}

// serverName is what a server's name must look like: a path segment of
// /mcp and a capability scope.
var serverName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// envName is an environment variable's name.
var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports what is wrong with the server named name, wrapping
// ErrConfig.
func (s Server) Validate(name string) error {
	if !serverName().MatchString(name) {
		return fmt.Errorf("%w: server name %q: use letters, digits, '_', '-' or '.', starting with a letter or digit (it is the directory /mcp/<name>)", ErrConfig, name)
	}
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return fmt.Errorf("%w: server %q has both command and url: a server is either a program spoken to over stdio (command) or a streamable HTTP endpoint (url)", ErrConfig, name)
	case len(s.Command) == 0 && s.URL == "":
		return fmt.Errorf("%w: server %q has neither command nor url: set command (e.g. [\"npx\", \"-y\", \"some-mcp-server@1.2.3\"]) or url (e.g. \"https://mcp.example.com/mcp\")", ErrConfig, name)
	}
	if len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "" {
		return fmt.Errorf("%w: server %q: command's first element is the program and must not be empty", ErrConfig, name)
	}
	if s.URL != "" {
		if err := s.validateHTTP(name); err != nil {
			return err
		}
	} else if s.TokenEnv != "" {
		return fmt.Errorf("%w: server %q: token_env is for an HTTP server (url); pass a stdio server its credentials with env", ErrConfig, name)
	}
	for _, e := range append(append([]string{}, s.Env...), s.TokenEnv) {
		if e != "" && !envName().MatchString(e) {
			return fmt.Errorf("%w: server %q: %q is not an environment variable name: name the variable (e.g. \"GITHUB_TOKEN\"), never put its value in the configuration", ErrConfig, name, e)
		}
	}
	if s.Timeout < 0 {
		return fmt.Errorf("%w: server %q: timeout must not be negative", ErrConfig, name)
	}
	return nil
}

// validateHTTP reports what is wrong with an HTTP server's url and the
// settings that go with it: no credentials in the url, no stdio settings,
// and a bearer token sent in clear text only to a loopback host.
func (s Server) validateHTTP(name string) error {
	if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		return fmt.Errorf("%w: server %q: url %q must start with http:// or https://", ErrConfig, name, s.URL)
	}
	if strings.Contains(strings.SplitN(strings.SplitN(s.URL, "://", 2)[1], "/", 2)[0], "@") {
		return fmt.Errorf("%w: server %q: url carries credentials; remove them and name the environment variable holding a bearer token in token_env", ErrConfig, name)
	}
	if len(s.Env) > 0 || s.Dir != "" {
		return fmt.Errorf("%w: server %q: env and dir are for a stdio server (command); an HTTP server takes token_env", ErrConfig, name)
	}
	if s.TokenEnv != "" && strings.HasPrefix(s.URL, "http://") && !loopbackURL(s.URL) {
		return fmt.Errorf("%w: server %q: token_env over plain http:// to %q would send the bearer token in clear text: use https:// (plain http is allowed only to a loopback host)", ErrConfig, name, s.URL)
	}
	return nil
}

// loopbackURL reports whether u's host is a loopback address (127.0.0.0/8,
// ::1 or localhost).
func loopbackURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := pu.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Options configure New. The zero value is a client with no servers.
type Options struct {
	// Servers are the upstream servers by name.
	Servers map[string]Server
	// Root is the directory a stdio server's relative Dir is relative to
	// (the tool root); "": the current directory.
	Root string
	// CacheDir is where each server's tool list is kept
	// (<CacheDir>/<server>.json, 0600) for offline use; "": no cache.
	CacheDir string
	// Logger receives connection events and stdio servers' stderr at Debug;
	// nil: slog.Default().
	Logger *slog.Logger
	// Getenv reads the environment (Env, TokenEnv); nil: os.Getenv.
	Getenv func(string) string
}

// Client is the mcp device over the configured servers. It is safe for
// concurrent use.
type Client struct {
	opts    Options
	log     *slog.Logger
	getenv  func(string) string
	sdk     *mcp.Client
	servers map[string]*conn
	closeMu sync.RWMutex // held for reading by calls, for writing by Close
	closed  bool
}

// conn is one server's session and tool list.
type conn struct {
	name string
	cfg  Server
	mu   sync.Mutex // guards the fields below and serialises connecting
	cs   *mcp.ClientSession
	// cur is cs, read without mu by the list_changed handler (which runs
	// on the session's reader and MUST NOT wait for mu).
	cur atomic.Pointer[mcp.ClientSession]
	// tools is the tool list as last read (live or from the cache); nil:
	// not read yet. stale is set by notifications/tools/list_changed.
	tools []Tool
	stale atomic.Bool
	live  bool // tools came from the live server in this Client's life
	// cmd is a stdio server's process while its session lasts.
	cmd *exec.Cmd
	// failed is when Refresh last failed to reach the server, and failure
	// why (zero: it did not).
	failed  time.Time
	failure error
}

// New returns a client over opts.Servers; it connects to nothing yet.
func New(opts Options) (*Client, error) {
	c := &Client{opts: opts, log: opts.Logger, getenv: opts.Getenv, servers: map[string]*conn{}}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.getenv == nil {
		c.getenv = os.Getenv
	}
	for name, s := range opts.Servers {
		if err := s.Validate(name); err != nil {
			return nil, err
		}
		c.servers[name] = &conn{name: name, cfg: s}
	}
	c.sdk = mcp.NewClient(&mcp.Implementation{Name: "agentos", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			for _, s := range c.servers {
				if s.cur.Load() == req.Session {
					s.stale.Store(true)
				}
			}
		},
	})
	return c, nil
}

// Servers returns the configured servers' names, sorted.
func (c *Client) Servers() []string {
	out := make([]string, 0, len(c.servers))
	for n := range c.servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// server returns the conn of name.
func (c *Client) server(name string) (*conn, error) {
	s, ok := c.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: the configured servers are %s (mcp.servers in agentos.json)", ErrUnknownServer, name, orNone(c.Servers()))
	}
	return s, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (s *conn) timeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return DefaultTimeout
}

// session returns s's session, connecting when there is none. s.mu MUST be
// held.
func (c *Client) session(ctx context.Context, s *conn) (*mcp.ClientSession, error) {
	if s.cs != nil {
		return s.cs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var (
		t      mcp.Transport
		stderr *tailBuffer
	)
	if len(s.cfg.Command) > 0 {
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Env = c.childEnv(s.cfg.Env)
		cmd.Dir = c.opts.Root
		if s.cfg.Dir != "" {
			cmd.Dir = s.cfg.Dir
			if !filepath.IsAbs(s.cfg.Dir) && c.opts.Root != "" {
				cmd.Dir = filepath.Join(c.opts.Root, s.cfg.Dir)
			}
		}
		stderr = &tailBuffer{max: 4096, log: c.log, server: s.name}
		cmd.Stderr = stderr
		// Its own process group, killed as a whole when the session ends
		// (killGroup): a launcher's children (npx starts node) MUST NOT
		// outlive it. WaitDelay bounds the wait for the stderr pipe, which
		// such a child may hold open.
		ownGroup(cmd)
		cmd.WaitDelay = 2 * time.Second
		s.cmd = cmd
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		origin, err := url.Parse(s.cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("%w: server %q: url %q: %v", ErrConfig, s.name, s.cfg.URL, err)
		}
		hc := &http.Client{CheckRedirect: sameOrigin(origin), Transport: capped{server: s.name, next: http.DefaultTransport}}
		if s.cfg.TokenEnv != "" {
			tok := c.getenv(s.cfg.TokenEnv)
			if tok == "" {
				return nil, fmt.Errorf("%w: server %q: the environment variable %s (token_env) is empty: export the server's bearer token in it", ErrUnavailable, s.name, s.cfg.TokenEnv)
			}
			hc.Transport = capped{server: s.name, next: bearer{token: tok, scheme: origin.Scheme, host: origin.Host, next: http.DefaultTransport}}
		}
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	}
	cs, err := c.sdk.Connect(ctx, t, nil)
	if err != nil {
		s.killGroup()
		note := ""
		if stderr != nil && stderr.String() != "" {
			// The full stderr went to the log line by line; the error,
			// which reaches the tool, the journal and the model, quotes
			// its tail with the values of the variables passed scrubbed.
			note = "; its stderr ends: " + c.scrubEnv(stderr.String(), s.cfg.Env)
		}
		return nil, fmt.Errorf("%w: server %q: connecting: %v%s", ErrUnavailable, s.name, err, note)
	}
	c.log.Debug("mcp: connected", slog.String("server", s.name))
	s.cs = cs
	s.cur.Store(cs)
	return cs, nil
}

// drop ends s's session after a transport failure, so that the next use
// connects again. s.mu MUST be held.
func (c *Client) drop(s *conn, why error) {
	if s.cs == nil {
		return
	}
	c.log.Warn("mcp: dropping the session after a failure; the next call reconnects", slog.String("server", s.name), slog.Any("err", why))
	_ = s.cs.Close()
	s.killGroup()
	s.cs = nil
	s.cur.Store(nil)
}

// scrubEnv replaces in text every value (of 4 bytes or more) of the
// environment variables names, as this process holds them: a stdio
// server's stderr quoted in an error MUST NOT carry the credentials passed
// to it.
func (c *Client) scrubEnv(text string, names []string) string {
	for _, n := range names {
		v := c.getenv(n)
		if len(v) < 4 {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), strings.Trim(strconv.Quote(v), `"`)} {
			text = strings.ReplaceAll(text, form, "[$"+n+"]")
		}
	}
	return text
}

// childEnv is a stdio server's environment: PATH, HOME and the named
// variables, nothing else.
func (c *Client) childEnv(names []string) []string {
	env := []string{}
	for _, n := range append([]string{"PATH", "HOME"}, names...) {
		if v := c.getenv(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// sameOrigin is an HTTP server's redirect policy: a redirect is followed
// only to the configured URL's origin (scheme and host:port), so that
// nothing of the session (its bearer token, its session id) is sent to
// another host.
func sameOrigin(origin *url.URL) func(*http.Request, []*http.Request) error {
	return func(r *http.Request, via []*http.Request) error {
		if r.URL.Scheme != origin.Scheme || r.URL.Host != origin.Host {
			return fmt.Errorf("refusing the redirect to %s://%s: an MCP server's redirects must stay on %s://%s (its url in mcp.servers)", r.URL.Scheme, r.URL.Host, origin.Scheme, origin.Host)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// bearer adds an Authorization header to the requests to the configured
// origin (scheme and host:port) only. IMPORTANT: the token MUST NOT reach
// any other host, whatever sends the request there.
type bearer struct {
	token        string
	scheme, host string
	next         http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != b.scheme || r.URL.Host != b.host {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// MaxResultBytes bounds one answer of an MCP server, before it is
// buffered: an HTTP response body (a JSON answer or an event stream) is
// cut off past it with an error saying so; a stdio server's line is
// bounded alike by the SDK (mcp.DefaultMaxLineLength, 16 MiB).
const MaxResultBytes = 16 << 20

// capped bounds every response body of an HTTP server to MaxResultBytes.
type capped struct {
	server string
	next   http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > MaxResultBytes {
		resp.Body.Close()
		return nil, c.tooBig()
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxResultBytes, err: c.tooBig}
	return resp, nil
}

func (c capped) tooBig() error {
	return fmt.Errorf("mcp server %q answered over the %d-byte limit of one answer (MaxResultBytes): its answer was cut off unread; ask the server for less (a page, a filter)", c.server, MaxResultBytes)
}

// cappedBody fails a read past left bytes.
type cappedBody struct {
	io.ReadCloser
	left int64
	err  func() error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.err()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// tailBuffer is a stdio server's stderr: it logs every line at Debug
// (the operator's log holds all of it) and keeps the last max bytes,
// quoted (scrubbed) when the server fails to start.
type tailBuffer struct {
	mu     sync.Mutex
	max    int
	b      []byte
	log    *slog.Logger
	server string
	line   []byte // a line not yet ended
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	if t.log != nil {
		t.line = append(t.line, p...)
		for {
			i := bytes.IndexByte(t.line, '\n')
			if i < 0 {
				break
			}
			t.log.Debug("mcp: server stderr", slog.String("server", t.server), slog.String("line", string(t.line[:i])))
			t.line = t.line[i+1:]
		}
		if len(t.line) > 64<<10 { // a line that never ends
			t.log.Debug("mcp: server stderr", slog.String("server", t.server), slog.String("line", string(t.line)))
			t.line = t.line[:0]
		}
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// mcpWireError is a JSON-RPC error the server answered.
type mcpWireError = jsonrpc.Error

// Request is the "call" operation's request.
type Request struct {
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// The operations besides "call": an upstream server's resources and
// prompts, reached as its tools are (journaled by the run's host, checked
// against the mcp right on "<server>/resource:<uri>" and
// "<server>/prompt:<name>", charged one tool call each).
const (
	OpCall         = "call"
	OpReadResource = "read_resource"
	OpGetPrompt    = "get_prompt"
)

// ResourceRequest is the "read_resource" operation's request.
type ResourceRequest struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// PromptRequest is the "get_prompt" operation's request.
type PromptRequest struct {
	Server string            `json:"server"`
	Prompt string            `json:"prompt"`
	Args   map[string]string `json:"args,omitempty"`
}

// Do implements driver.Device: operations "call", "read_resource" and
// "get_prompt" (see the package doc).
func (c *Client) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	var (
		out json.RawMessage
		err error
	)
	switch op {
	case OpCall:
		var r Request
		if err := strictDecode(req, &r); err != nil {
			return nil, driver.Errorf(driver.CodeInvalid, "mcp.call: bad arguments: %v; pass {server, tool, args}", err)
		}
		out, err = c.Call(ctx, r.Server, r.Tool, r.Args)
	case OpReadResource:
		var r ResourceRequest
		if err := strictDecode(req, &r); err != nil || r.URI == "" {
			return nil, driver.Errorf(driver.CodeInvalid, "mcp.read_resource: bad arguments (%v): pass {server, uri}, uri not empty", err)
		}
		out, err = c.ReadResource(ctx, r.Server, r.URI)
	case OpGetPrompt:
		var r PromptRequest
		if err := strictDecode(req, &r); err != nil || r.Prompt == "" {
			return nil, driver.Errorf(driver.CodeInvalid, "mcp.get_prompt: bad arguments (%v): pass {server, prompt, args}, args an object of strings", err)
		}
		out, err = c.GetPrompt(ctx, r.Server, r.Prompt, r.Args)
	default:
		return nil, driver.Errorf(driver.CodeUnsupported, "mcp has no operation %q (call, read_resource, get_prompt)", op)
	}
	if err != nil {
		return nil, asDriverError(err)
	}
	return out, nil
}

// strictDecode decodes req into v, refusing unknown fields.
func strictDecode(req json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(req)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ReadResource reads the resource uri of server and answers its contents
// (a list of {uri, mimeType, text | blob}) in canonical JSON.
func (c *Client) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	return c.onSession(ctx, server, "resource "+uri, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return nil, err
		}
		if res.Contents == nil {
			return []*mcp.ResourceContents{}, nil
		}
		return res.Contents, nil
	})
}

// GetPrompt gets the prompt name of server with args and answers it
// ({description, messages}) in canonical JSON.
func (c *Client) GetPrompt(ctx context.Context, server, name string, args map[string]string) (json.RawMessage, error) {
	return c.onSession(ctx, server, "prompt "+name, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		if err != nil {
			return nil, err
		}
		return map[string]any{"description": res.Description, "messages": res.Messages}, nil
	})
}

// onSession runs fn on server's session, bounded by its timeout, and
// encodes what it answers canonically. Errors as Call's: a protocol error
// is the server's refusal (CodeInvalid); a transport error drops the
// session (ErrUnavailable; the next request reconnects).
func (c *Client) onSession(ctx context.Context, server, what string, fn func(context.Context, *mcp.ClientSession) (any, error)) (json.RawMessage, error) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil, ErrClosed
	}
	s, err := c.server(server)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cs, err := c.session(ctx, s)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	answer, err := fn(cctx, cs)
	if err != nil {
		var we *mcpWireError
		if errors.As(err, &we) {
			return nil, driver.Errorf(driver.CodeInvalid, "%s: %s: the server refused it: %s", server, what, we.Message)
		}
		if ctx.Err() != nil {
			return nil, driver.Errorf(driver.CodeUnavailable, "%s: %s: the run ended: %v", server, what, context.Cause(ctx))
		}
		s.mu.Lock()
		if s.cs == cs {
			c.drop(s, err)
		}
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: %s: %v (the next call reconnects)", ErrUnavailable, server, what, err)
	}
	b, err := canonical(answer)
	if err != nil {
		return nil, driver.Errorf(driver.CodeIO, "%s: %s: encoding the answer: %v", server, what, err)
	}
	return b, nil
}

// asDriverError gives err the code a tool sees.
func asDriverError(err error) error {
	var de *driver.Error
	switch {
	case errors.As(err, &de):
		return de
	case errors.Is(err, ErrUnknownServer), errors.Is(err, ErrUnknownTool):
		return driver.Errorf(driver.CodeNotFound, "%v", err)
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrClosed):
		return driver.Errorf(driver.CodeUnavailable, "%v", err)
	}
	return driver.Errorf(driver.CodeIO, "%v", err)
}

// Call calls tool on server with args (a JSON object; empty means {}) and
// returns the result as the "call" operation answers it. A result with
// isError is a *driver.Error with CodeToolError.
//
// IMPORTANT: the SDK decodes structuredContent into float64 numbers, so an
// integer beyond 2^53 arrives rounded (as JSON.parse would round it in the
// tool anyway); content text items carry such values verbatim.
func (c *Client) Call(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil, ErrClosed
	}
	s, err := c.server(server)
	if err != nil {
		return nil, err
	}
	if tool == "" {
		return nil, driver.Errorf(driver.CodeInvalid, "mcp.call: name the tool of server %q", server)
	}
	var a map[string]any
	if len(strings.TrimSpace(string(args))) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, driver.Errorf(driver.CodeInvalid, "mcp.call %s/%s: args must be a JSON object: %v", server, tool, err)
		}
	}
	if a == nil {
		a = map[string]any{}
	}
	s.mu.Lock()
	cs, err := c.session(ctx, s)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		var we *mcpWireError
		if errors.As(err, &we) {
			// The server answered with a protocol error (e.g. an unknown
			// tool): the session is fine.
			return nil, driver.Errorf(driver.CodeInvalid, "%s/%s: the server refused the call: %s", server, tool, we.Message)
		}
		if ctx.Err() != nil {
			return nil, driver.Errorf(driver.CodeUnavailable, "%s/%s: the run ended: %v", server, tool, context.Cause(ctx))
		}
		s.mu.Lock()
		if s.cs == cs {
			c.drop(s, err)
		}
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s/%s: %v (the next call reconnects)", ErrUnavailable, server, tool, err)
	}
	if res.IsError {
		return nil, &driver.Error{Code: CodeToolError, Message: fmt.Sprintf("%s/%s: %s", server, tool, contentText(res.Content))}
	}
	var answer any = res.Content
	if res.StructuredContent != nil {
		answer = res.StructuredContent
	} else if res.Content == nil {
		answer = []mcp.Content{}
	}
	b, err := canonical(answer)
	if err != nil {
		return nil, driver.Errorf(driver.CodeIO, "%s/%s: encoding the result: %v", server, tool, err)
	}
	return b, nil
}

// canonical encodes v as the journal stores answers (object keys sorted,
// numbers as written, no HTML escaping), so that a tool sees the same bytes
// live and in a replay: JSON.stringify of a result gives the same text
// both times.
func canonical(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return driver.Marshal(x)
}

// contentText joins the text of a result's text content (an error's
// message), or describes it when it has none.
func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "the tool failed (isError) with no text content"
	}
	return strings.Join(parts, "\n")
}

// Close ends every session (a stdio server's process exits). Calls after
// Close fail with ErrClosed. A server that cannot be told (an HTTP server
// gone already) is no error: the session ends on this side all the same;
// it is logged at Debug.
func (c *Client) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	// In parallel: a stdio server may take its TerminateDuration (and
	// more) to go; shutdown waits for the slowest, not for their sum.
	var wg sync.WaitGroup
	for _, s := range c.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.cs != nil {
				if err := s.cs.Close(); err != nil {
					c.log.Debug("mcp: closing the session", slog.String("server", s.name), slog.Any("err", err))
				}
				s.cs = nil
				s.cur.Store(nil)
			}
			s.killGroup()
		}()
	}
	wg.Wait()
	return nil
}

// killGroup kills what is left of a stdio server's process group (its
// children, e.g. the node process npx started) once its session ended,
// and forgets the command. s.mu MUST be held.
func (s *conn) killGroup() {
	if s.cmd != nil && s.cmd.Process != nil {
		killGroup(s.cmd.Process.Pid)
	}
	s.cmd = nil
}
