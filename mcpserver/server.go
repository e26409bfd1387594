package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/persona"
	"github.com/agentos-run/agentos/pii"
)

// DefaultProgressInterval is how often a long call reports progress when
// Options.ProgressInterval is 0.
const DefaultProgressInterval = time.Second

// Options configure a Server. Node and Registry are REQUIRED; the zero
// value of the others means sensible defaults.
type Options struct {
	// Node runs the tools (REQUIRED).
	Node Node
	// Registry is the client of the node's registry actor (REQUIRED): the
	// server lists the tools through it and watches their changes
	// (regclient.Client.Watch), so it MUST be a client of this node's
	// registry (kerneltools.Node.RegistryClient).
	Registry *regclient.Client
	// ToolsDir is the tools directory, stripped from a registered tool's
	// path to name it (default "tools").
	ToolsDir string
	// Name and Version are the server's implementation in initialize
	// (default "agentos" and "dev").
	Name, Version string
	// Instructions are sent to clients in initialize (default: a short
	// guide to the tools).
	Instructions string
	// ProgressInterval is how often a long call reports progress (0:
	// DefaultProgressInterval).
	ProgressInterval time.Duration
	// Logger receives the server's logs (nil: slog.Default()). IMPORTANT:
	// over stdio it MUST NOT write to stdout, the protocol's stream.
	Logger *slog.Logger
	// PII is the tool root's tokenizer (nil: nothing is tokenized). An MCP
	// client is a model's host, so every result and error it receives is
	// tokenized, and exec_sql's arguments are restored where pii.restore_to
	// allows sql, exactly as for an agent's model (agent.CallTool).
	PII *pii.Tokenizer
	// Journal is the node's journal (nil: no version, run or task
	// resources). It serves agentos://tools/{path}@{hash} and
	// agentos://runs/{id}.
	Journal *journal.Journal
	// Personas is the tool root's persona store (nil: no prompts): each
	// persona the client may read is a prompt, and agentos://personas/{name}.
	Personas *persona.Store
	// TasksDir keeps the tasks (tasks.go), one file each, so that a task
	// outlives the node ("": in memory, lost when the Server closes).
	TasksDir string
	// MaxLiveTasks is how many tasks one token may have running at once
	// (0: DefaultMaxLiveTasks); one more is refused with ErrTaskCap.
	MaxLiveTasks int
	// TaskTTL is how long a task and its result are kept after it was
	// created (0: DefaultTaskTTL).
	TaskTTL time.Duration
	// TaskSweep is how often expired tasks are removed (0:
	// DefaultTaskSweep); they are also removed when the Server starts.
	TaskSweep time.Duration
	// PersonaPoll is how often the persona store is looked at for changes
	// (prompts/list_changed; 0: DefaultPersonaPoll).
	PersonaPoll time.Duration
}

// DefaultPersonaPoll is how often the personas are looked at for changes
// when Options.PersonaPoll is 0: they are files of the tool root, changed
// by 'agentos persona set', a tournament or a Git pull.
const DefaultPersonaPoll = 2 * time.Second

// Server serves a node's tools over MCP: one mcp.Server per process (For),
// kept in step with the registry. It is safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	closed   bool
	bound    map[proc.PID]*bound        // the MCP server of each process
	byToken  map[string]proc.Process    // HTTP: the process of each token id
	tools    map[string]toolmeta.Tool   // the registered tools by MCP name
	personas []persona.Persona          // the personas (current versions), by name
	spawned  []proc.Process             // the processes HTTP tokens made
	opening  map[proc.PID]chan struct{} // HTTP: one initialize at a time per process (admitSession)
	uses     sessionUses                // HTTP: when each session was last used (sessions.go)

	confirms *confirmer // signs and redeems high-risk confirmations (own lock)
	tasks    taskStore  // the tasks (own lock)

	stopWatch  func()
	changes    atomic.Uint64 // the registry changes heard (Watch)
	listed     atomic.Uint64 // the value of changes that s.tools is as new as
	refreshing sync.Mutex    // one refresh at a time (refresh)
	wake       chan struct{} // the registry changed (buffered: one pending wake)
	stop       chan struct{} // closed by Close
	done       chan struct{} // closed when follow returns
}

// bound is the MCP server of one process and the registered tools it
// offers (MCP name -> content hash).
type bound struct {
	p       proc.Process
	srv     *mcp.Server
	regs    map[string]string
	sources map[string]string // the tool sources listed as resources: URI -> content hash
	prompts map[string]string // the personas offered as prompts: name -> version
}

// New returns a Server of opts.Node's tools and starts watching the
// registry. Close it.
func New(opts Options) (*Server, error) {
	if opts.Node == nil || opts.Registry == nil || opts.Registry.PID == nil || opts.Registry.Root == nil {
		return nil, fmt.Errorf("%w: Options.Node and Options.Registry (with its PID and Root) are required (the runtime's Node() and Node().RegistryClient())", ErrOptions)
	}
	if opts.ToolsDir == "" {
		opts.ToolsDir = regclient.DefaultToolsDir
	}
	if opts.Name == "" {
		opts.Name = "agentos"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Instructions == "" {
		opts.Instructions = defaultInstructions
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.PersonaPoll <= 0 {
		opts.PersonaPoll = DefaultPersonaPoll
	}
	if opts.MaxLiveTasks <= 0 {
		opts.MaxLiveTasks = DefaultMaxLiveTasks
	}
	if opts.TaskTTL <= 0 {
		opts.TaskTTL = DefaultTaskTTL
	}
	if opts.TaskSweep <= 0 {
		opts.TaskSweep = DefaultTaskSweep
	}
	s := &Server{
		opts: opts, log: opts.Logger,
		bound: map[proc.PID]*bound{}, byToken: map[string]proc.Process{}, opening: map[proc.PID]chan struct{}{}, confirms: newConfirmer(),
		tasks: taskStore{dir: opts.TasksDir, ttl: opts.TaskTTL, maxLive: opts.MaxLiveTasks},
		wake:  make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	// Watch first: a change made while the tools are listed wakes follow.
	s.stopWatch = opts.Registry.Watch(func() {
		s.changes.Add(1)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
	tools, err := s.listTools(context.Background())
	if err != nil {
		s.stopWatch()
		return nil, err
	}
	s.tools = tools
	s.personas = s.listPersonas()
	go s.follow()
	return s, nil
}

// listTools asks the registry actor for the registered tools, by MCP name.
func (s *Server) listTools(ctx context.Context) (map[string]toolmeta.Tool, error) {
	list, err := s.opts.Registry.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp: listing the registered tools: %w", err)
	}
	return registeredTools(list, s.opts.ToolsDir), nil
}

const defaultInstructions = "agentos: a sandboxed TypeScript tool runtime. search_tools finds a registered tool, exec_tool runs one (each registered tool is also its own MCP tool), forge_tool writes and registers a new one; write_file/patch_file edit tools under tools/, check_tool checks one. Every run is journaled and replayable."

// follow keeps every process's MCP tools, resources and prompts in step
// with the registry and the personas until Close, which also cuts short a
// List it waits for.
func (s *Server) follow() {
	defer close(s.done)
	ctx, cancel := s.untilClosed(context.Background())
	defer cancel()
	poll := time.NewTicker(s.opts.PersonaPoll)
	defer poll.Stop()
	sweep := time.NewTicker(s.opts.TaskSweep)
	defer sweep.Stop()
	s.sweepTasks()
	for {
		var personas []persona.Persona
		select {
		case <-s.stop:
			return
		case <-sweep.C:
			s.sweepTasks()
			continue
		case <-s.wake:
			if s.changes.Load() == s.listed.Load() {
				continue // a request caught up first (catchUp)
			}
			personas = s.listPersonas()
		case <-poll.C:
			personas = s.listPersonas()
			s.mu.Lock()
			same := personaKey(personas) == personaKey(s.personas)
			s.mu.Unlock()
			if same {
				continue
			}
		}
		if !s.refresh(ctx, personas) {
			return
		}
	}
}

// refresh lists the registered tools and brings every process's MCP
// tools, resources and prompts in step with them and personas; false: the
// server is closed.
func (s *Server) refresh(ctx context.Context, personas []persona.Persona) bool {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	seen := s.changes.Load() // read first: a change during the List is listed again
	tools, err := s.listTools(ctx)
	if err != nil {
		s.log.Warn("mcp: the registry did not answer: the tools stay as they were until its next change", slog.Any("err", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if err == nil {
		s.tools = tools
	}
	s.personas = personas
	s.dropEndedLocked()
	for _, b := range s.bound {
		s.syncLocked(b)
	}
	if err == nil {
		s.listed.Store(seen) // last: catchUp trusts it without s.mu
	}
	return true
}

// catchUp refreshes the tools now when the registry changed since they
// were listed. IMPORTANT: a request that reads the tools MUST call it
// first, so that a tool whose write returned before the request is
// served by it, whether or not follow has woken yet.
func (s *Server) catchUp(ctx context.Context) {
	if s.changes.Load() == s.listed.Load() {
		return
	}
	ctx, cancel := s.untilClosed(ctx) // Close waits for follow, which may wait for this
	defer cancel()
	s.refresh(ctx, s.listPersonas())
}

// caughtUp is the middleware of every bound server: the requests that
// read the tools are served after catchUp.
func (s *Server) caughtUp(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "tools/list", "resources/list", "resources/read":
			s.catchUp(ctx)
		}
		return next(ctx, method, req)
	}
}

// untilClosed returns a context of parent that also ends when Close is
// called, or cancel.
func (s *Server) untilClosed(parent context.Context) (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(parent)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// sweepTasks removes the expired tasks.
func (s *Server) sweepTasks() {
	if n := s.tasks.sweep(time.Now()); n > 0 {
		s.log.Debug("mcp: expired tasks removed", "count", n)
	}
}

// For returns the MCP server bound to p (made on first use): serve it on
// any transport (Run, or mcp.Server.Connect). Its tools run as p.
func (s *Server) For(p proc.Process) (*mcp.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if b, ok := s.bound[p.PID()]; ok {
		return b.srv, nil
	}
	// A new client sees the personas as they are now, not as of the last
	// poll; the clients already bound hear of the change as they would
	// from the poll.
	if ps := s.listPersonas(); personaKey(ps) != personaKey(s.personas) {
		s.personas = ps
		for _, b := range s.bound {
			s.syncLocked(b)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: s.opts.Name, Title: "agentos", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: s.opts.Instructions,
		Logger:       s.log,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			Logging:     &mcp.LoggingCapabilities{},
			Extensions:  map[string]any{TasksExtension: map[string]any{}},
		},
		CompletionHandler: s.complete(p),
	})
	srv.AddReceivingMiddleware(s.caughtUp)
	kt, err := s.opts.Node.Tools(p)
	if err != nil {
		return nil, err
	}
	for _, t := range kt {
		srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters}, s.logged(p, s.kernelHandler(p, t)))
	}
	s.addResourceTemplates(srv, p)
	b := &bound{p: p, srv: srv, regs: map[string]string{}, sources: map[string]string{}, prompts: map[string]string{}}
	s.syncLocked(b)
	s.bound[p.PID()] = b
	return srv, nil
}

// Run serves p's MCP server on t until the client disconnects (nil) or
// ctx ends (ctx's error), e.g. Run(ctx, rt.Agent(), &mcp.StdioTransport{}).
func (s *Server) Run(ctx context.Context, p proc.Process, t mcp.Transport) error {
	srv, err := s.For(p)
	if err != nil {
		return err
	}
	// Its client's tasks are answered as over HTTP (taskconn.go).
	t = &taskTransport{inner: t, s: s, id: ident{p: p, user: "proc:" + p.Name()}}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-ended
		return ctx.Err()
	case err := <-ended:
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, mcp.ErrConnectionClosed) {
			s.log.Debug("mcp: the client disconnected", slog.Any("pid", p.PID()))
			return nil
		}
		return err
	}
}

// syncLocked brings b's registered tools, tool-source resources and
// persona prompts in step with s.tools and s.personas (s.mu held): each
// change makes the SDK send the list_changed notification of its list.
func (s *Server) syncLocked(b *bound) {
	s.syncToolsLocked(b)
	s.syncResourcesLocked(b)
	if s.opts.Personas != nil {
		s.syncPromptsLocked(b)
	}
}

// syncToolsLocked adds, replaces and removes b's registered tools to match
// s.tools (s.mu held).
func (s *Server) syncToolsLocked(b *bound) {
	want := map[string]toolmeta.Tool{}
	for name, t := range s.tools {
		if b.p.Covers(capability.Exec, t.Path) {
			want[name] = t
		}
	}
	var gone []string
	for name := range b.regs {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(b.regs, name)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		if b.regs[name] == t.Hash {
			continue
		}
		b.srv.AddTool(registeredTool(name, t), s.logged(b.p, s.registeredHandler(b.p, t)))
		b.regs[name] = t.Hash
	}
}

// dropEndedLocked forgets the servers of processes that ended (a token's
// process killed with 'agentos kill'), closing their sessions (s.mu held).
func (s *Server) dropEndedLocked() {
	for pid, b := range s.bound {
		if _, ended := b.p.Reason(); ended {
			delete(s.bound, pid)
			delete(s.opening, pid)
			for ss := range b.srv.Sessions() {
				go ss.Close() // not under s.mu: a closing session may call back
			}
		}
	}
}

// Close stops following the registry, closes every session, and ends the
// processes the HTTP tokens made. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	bound := maps.Clone(s.bound)
	spawned := s.spawned
	s.mu.Unlock()
	s.stopWatch()
	close(s.stop)
	<-s.done
	s.stopTasks()
	for _, b := range bound {
		for ss := range b.srv.Sessions() {
			_ = ss.Close()
		}
	}
	for _, p := range spawned {
		_ = s.opts.Node.Processes().Kill(p.PID(), "mcp server closed")
	}
	return nil
}

// logged logs every call of h at Debug when it ends: the tool, the
// process, and the error kind of a failed one ("cancelled" for a call the
// client cancelled, whose answer it no longer reads).
func (s *Server) logged(p proc.Process, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if res != nil && res.InputRequests != nil {
			return res, err // asking for confirmation; the call goes on when answered
		}
		kind := ""
		if res != nil && res.IsError {
			kind = KindError
			if k, _, ok := strings.Cut(resultText(res), ": "); ok {
				kind = k // failure's "<kind>: <message>"
			}
		}
		s.log.Debug("mcp: tool call ended", slog.String("tool", req.Params.Name), slog.Any("pid", p.PID()), slog.String("error_kind", kind))
		return res, err
	}
}

// Node is what the MCP server needs of the node: the kernel tools bound to
// a process and called by name, the process table its sessions run in,
// and the approval gate a high-risk run waits at. The kernel tools' node
// (kerneltools.Node) implements it.
type Node interface {
	// Tools returns the kernel tools bound to p (names: a selection).
	Tools(p proc.Process, names ...string) ([]kerneltool.Tool, error)
	// Call runs one kernel tool as p.
	Call(ctx context.Context, p proc.Process, tool string, args json.RawMessage) (json.RawMessage, error)
	// Processes is the process table the sessions' processes run in (the
	// node's kernel).
	Processes() proc.Table
	// Approvals is the approval gate (nil: none).
	Approvals() *approval.Gate
	// ApprovalAsk is what approving the tool at path would clear for p.
	ApprovalAsk(p proc.Process, path string) (approval.Ask, error)
}
