package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridge serves, on down (e.g. stdin/stdout), the MCP server up reaches
// (e.g. a serving node's socket, whose /mcp serves HTTPHandler): its tools,
// kept in step with it (list_changed is relayed), every call forwarded with
// its progress token, cancellation and confirmation (elicitation) passed
// through. It returns nil when down disconnects, an error wrapping
// ErrUpstreamClosed when up does (the serving node stopped: the bridged
// client's tools are gone, and it MUST reconnect), or ctx's error.
//
// It is how 'agentos serve --mcp' serves a stdio client on a tool root
// another 'agentos serve' already serves: the tools run on that node.
func Bridge(ctx context.Context, up, down mcp.Transport, log *slog.Logger) error {
	return BridgeWith(ctx, up, down, BridgeOptions{Logger: log})
}

// BridgeOptions configure BridgeWith. The zero value is Bridge's behaviour.
type BridgeOptions struct {
	// Logger receives the bridge's logs (nil: slog.Default()).
	Logger *slog.Logger
	// Reconnect, when set, is called when up closes the session (the
	// serving node stopped): it returns the transport of the server to
	// relay from then on (e.g. a node started to take over), and the client
	// keeps its session: its tools are replaced, with list_changed. A call
	// made meanwhile fails (kind "error") and may be retried. An error of
	// Reconnect ends BridgeWith with ErrUpstreamClosed and that error.
	Reconnect func(ctx context.Context) (mcp.Transport, error)
}

// upstreamSession has the bridge open a session (MCP 2025-11-25) with its
// upstream: the session's standing stream is how it learns that the
// serving node stopped (Reconnect). IMPORTANT: a stateless (2026-07-28)
// upstream would leave it nothing to lose until its next call failed.
var upstreamSession = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// BridgeWith is Bridge with options: with opts.Reconnect, it survives the
// upstream server stopping.
func BridgeWith(ctx context.Context, up, down mcp.Transport, opts BridgeOptions) error {
	br := &bridge{log: cmp.Or(opts.Logger, slog.Default()), opts: opts, resync: make(chan struct{}, 1), have: map[string]bool{}}
	br.client = mcp.NewClient(&mcp.Implementation{Name: "agentos-bridge", Version: "1"}, br.clientOptions())
	first, err := br.client.Connect(ctx, up, upstreamSession)
	if err != nil {
		return fmt.Errorf("connecting to the serving node's MCP endpoint: %w", err)
	}
	br.cur.Store(first)
	defer func() { br.cur.Load().Close() }()
	info := first.InitializeResult()
	br.srv = mcp.NewServer(&mcp.Implementation{Name: info.ServerInfo.Name, Title: info.ServerInfo.Title, Version: info.ServerInfo.Version}, &mcp.ServerOptions{
		Instructions: info.Instructions,
		Logger:       br.log,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	if err := br.relist(ctx); err != nil {
		return fmt.Errorf("listing the serving node's tools: %w", err)
	}
	downS, err := br.srv.Connect(ctx, down, nil)
	if err != nil {
		return err
	}
	defer downS.Close()
	br.downSess.Store(downS)
	downEnded, upEnded := make(chan error, 1), make(chan error, 1)
	go func() { downEnded <- downS.Wait() }()
	go func() { upEnded <- first.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-downEnded:
			if err == nil || errors.Is(err, mcp.ErrConnectionClosed) {
				return nil
			}
			return err
		case err := <-upEnded:
			if err := br.reconnect(ctx, err, upEnded); err != nil {
				return err
			}
		case <-br.resync:
			if err := br.relist(ctx); err != nil {
				br.log.Warn("mcp bridge: relisting the serving node's tools", slog.Any("err", err))
			}
		}
	}
}

// bridge is one BridgeWith's state: the upstream client and its current
// session, the server the client below talks to, and the tools relayed.
type bridge struct {
	log      *slog.Logger
	opts     BridgeOptions
	client   *mcp.Client
	srv      *mcp.Server
	cur      atomic.Pointer[mcp.ClientSession] // the upstream session relayed
	downSess atomic.Pointer[mcp.ServerSession]
	resync   chan struct{}

	mu   sync.Mutex
	have map[string]bool // the tools relayed
}

// clientOptions are the upstream client's: a tool list change relists, an
// elicitation asks the client below, progress is relayed down.
func (br *bridge) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		// The confirmation of a high-risk tool is passed down as it came.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case br.resync <- struct{}{}:
			default:
			}
		},
		ElicitationHandler:          br.elicit,
		ProgressNotificationHandler: br.progress,
	}
}

// elicit answers a node asking its (pre-2026-07-28) clients to confirm a
// high-risk run with elicitation/create: it asks the bridged client.
func (br *bridge) elicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ss := br.downSess.Load()
	if ss == nil || !elicits(ss.InitializeParams()) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	res, err := ss.Elicit(ctx, r.Params)
	if err != nil {
		// A 2026-07-28 client cannot be asked in the middle of a
		// call (it is asked with an input request instead).
		br.log.Info("mcp bridge: the client could not be asked to confirm", slog.Any("err", err))
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return res, nil
}

// progress relays a progress notification to the client below.
func (br *bridge) progress(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
	if ss := br.downSess.Load(); ss != nil {
		if err := ss.NotifyProgress(ctx, r.Params); err != nil {
			br.log.Debug("mcp bridge: a progress notification was not relayed", slog.Any("err", err))
		}
	}
}

// forward relays a tool call upstream.
func (br *bridge) forward(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{
		Name: req.Params.Name, Arguments: req.Params.Arguments,
		InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState,
	}
	// Only the progress token crosses: the rest of _meta is the
	// client's session with the bridge (its protocol version ...).
	if tok := req.Params.GetProgressToken(); tok != nil {
		p.SetProgressToken(tok)
	}
	res, err := br.cur.Load().CallTool(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return failure(KindCancelled, "the call was cancelled"), nil
		}
		return failure(KindError, "the serving node did not answer: "+err.Error()), nil
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		if res.InputRequests != nil || (res.IsError && strings.HasPrefix(resultText(res), KindConfirmation+": ")) {
			return failure(KindConfirmation, fmt.Sprintf("%s needs the user's confirmation (its risk is high or critical), and this client did not declare the elicitation capability; use a client that supports elicitation", req.Params.Name)), nil
		}
	}
	return res, nil
}

// relist makes the tools offered below the upstream session's: new and
// changed ones added, gone ones removed.
func (br *bridge) relist(ctx context.Context) error {
	br.mu.Lock()
	defer br.mu.Unlock()
	want := map[string]bool{}
	for t, err := range br.cur.Load().Tools(ctx, nil) {
		if err != nil {
			return err
		}
		want[t.Name] = true
		br.srv.AddTool(t, br.forward) // replaces a changed one
	}
	var gone []string
	for name := range br.have {
		if !want[name] {
			gone = append(gone, name)
		}
	}
	br.srv.RemoveTools(gone...)
	br.have = want
	return nil
}

// reconnect answers the upstream session ending with ended: without
// BridgeOptions.Reconnect it is ErrUpstreamClosed; with it, a new session
// is connected and relayed (its end reported on upEnded) and its tools
// listed.
func (br *bridge) reconnect(ctx context.Context, ended error, upEnded chan error) error {
	err := ErrUpstreamClosed
	if ended != nil && !errors.Is(ended, mcp.ErrConnectionClosed) {
		err = fmt.Errorf("%w: %w", ErrUpstreamClosed, ended)
	}
	if br.opts.Reconnect == nil {
		return err
	}
	br.log.Warn("mcp bridge: the serving node closed the session; reconnecting", slog.Any("err", err))
	t, rerr := br.opts.Reconnect(ctx)
	if rerr != nil {
		return fmt.Errorf("%w; reconnecting failed: %w", err, rerr)
	}
	next, rerr := br.client.Connect(ctx, t, upstreamSession)
	if rerr != nil {
		return fmt.Errorf("%w; reconnecting failed: %w", err, rerr)
	}
	br.cur.Swap(next).Close()
	go func() { upEnded <- next.Wait() }()
	if err := br.relist(ctx); err != nil {
		br.log.Warn("mcp bridge: listing the new node's tools", slog.Any("err", err))
	}
	return nil
}

// elicits reports whether a client declared the elicitation capability.
func elicits(p *mcp.InitializeParams) bool {
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// resultText is the text of a result's first content.
func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}
