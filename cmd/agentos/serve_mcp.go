package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/mcpserver"
)

// MCPTokenFile is where 'agentos serve --mcp-http' writes a token for the
// default grants when the node has no capability.signing_key_env (so no
// 'agentos token' can mint one it verifies): mode 0600, valid while that
// node runs.
var MCPTokenFile = filepath.Join(host.StateDir, "mcp-token")

// serveMCP starts MCP over stdio (stdio) and/or streamable HTTP
// (cfg.MCP.Serve.HTTPAddr) for rt. done reports when the stdio session or
// the HTTP server ends; stop closes everything (call it before rt.Close).
func serveMCP(ctx context.Context, rt *host.Runtime, cfg host.Config, stdio bool, banner io.Writer) (done <-chan error, stop func(), err error) {
	srv, err := rt.MCPServer() // the one the node socket's /mcp serves too
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan error, 2)
	var hs *http.Server
	var tokenFile string
	if addr := cfg.MCP.Serve.HTTPAddr; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			srv.Close()
			return nil, nil, fmt.Errorf("MCP over HTTP cannot listen on %s: %w (choose another --mcp-http address)", addr, err)
		}
		opts := mcpserver.HTTPOptions{}
		if cfg.MCP.Serve.AllowAnonymous {
			opts.Anonymous = rt.Agent()
		}
		// A token's process has the default process's quota (agent.quota).
		for m, v := range cfg.Agent.Quota {
			if opts.Quota == nil {
				opts.Quota = capability.Limits{}
			}
			opts.Quota[capability.Meter(m)] = v
		}
		hs = &http.Server{
			Handler:           boundedBodies(srv.HTTPHandler(opts), cfg.MCP.Serve.BodyTimeoutOrDefault(), mcp.DefaultMaxRequestBodyBytes),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
		}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				ch <- err
			}
		}()
		fmt.Fprintf(banner, "MCP over streamable HTTP at http://%s%s\n", ln.Addr(), mcpserver.Path)
		switch key, _ := cfg.CapabilityKey(); {
		case cfg.MCP.Serve.AllowAnonymous:
			fmt.Fprintln(banner, "requests without a token run as the default process (mcp.serve.allow_anonymous)")
		case key != nil:
			fmt.Fprintln(banner, "every request needs \"Authorization: Bearer <token>\": mint one with 'agentos token --grant exec:tools/ ...'")
		default:
			// No shared key: only this process can mint a token it verifies.
			tok := rt.Kernel().Authority().Mint("mcp", cfg.DefaultGrants(), capability.Caveats{})
			tokenFile = filepath.Join(rt.Root(), MCPTokenFile)
			if err := os.WriteFile(tokenFile, []byte(tok.Encode()+"\n"), 0o600); err != nil {
				hs.Close()
				srv.Close()
				return nil, nil, fmt.Errorf("writing the MCP token: %w", err)
			}
			fmt.Fprintf(banner, "every request needs \"Authorization: Bearer <token>\": a token for the default grants, valid while this node runs, is in %s (set capability.signing_key_env to mint lasting ones with 'agentos token')\n", tokenFile)
		}
	}
	if stdio {
		go func() {
			ch <- srv.Run(ctx, rt.Agent(), &mcp.StdioTransport{})
		}()
		fmt.Fprintln(banner, "MCP on stdin/stdout as the default process; the node stops when the client closes stdin")
	}
	stop = func() {
		if hs != nil {
			// Requests in flight get a short grace; then every connection
			// is closed (an open event stream, a client that stopped
			// reading), so a SIGTERM ends serve promptly.
			sctx, cancel := context.WithTimeout(context.Background(), mcpShutdownGrace)
			if err := hs.Shutdown(sctx); err != nil {
				_ = hs.Close()
			}
			cancel()
		}
		srv.Close()
		if tokenFile != "" {
			_ = os.Remove(tokenFile)
		}
	}
	return ch, stop, nil
}

// mcpShutdownGrace bounds how long stopping MCP over HTTP waits for the
// requests in flight before it closes their connections.
const mcpShutdownGrace = 2 * time.Second

// boundedBodies reads a request's whole body, at most limit bytes within
// timeout of the request's start, before next sees it. A body not sent
// whole in time is answered 408 and one over limit 413, each saying what
// to do, and the connection is closed: a slow client holds no handler, no
// session admission and no shutdown for longer than timeout.
//
// IMPORTANT: the read deadline is lifted once the body is read, so a
// long answer (an event stream) is not cut by it.
func boundedBodies(next http.Handler, timeout time.Duration, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			w.Header().Set("Connection", "close")
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes, the limit: send a smaller request", limit))
			case errors.Is(err, os.ErrDeadlineExceeded):
				httpError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body was not received within %s (mcp.serve.body_timeout): send the whole body at once", timeout))
			default:
				httpError(w, http.StatusBadRequest, "the request body cannot be read: "+err.Error())
			}
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// httpError answers code with a JSON {"error": msg}.
func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// nodeServes reports whether a node answers on root's socket.
func nodeServes(root string) bool {
	c, err := admin.Dial(root)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// bridgeMCP serves MCP on stdin/stdout with the tools of the node serving
// root, through its socket's /mcp (mcpserver.BridgeWith). When that node
// stops, the bridge takes over: it bridges to the node serving root then
// (another window's that took over first), or starts its own node on root
// (cfg) and relays it, so the client keeps its tools.
func bridgeMCP(ctx context.Context, root string, cfg host.Config) error {
	log := cmdLogger(ctx)
	socket := func() (mcp.Transport, func()) {
		sock := filepath.Join(root, admin.Socket)
		hc := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}}
		// Over a local socket a lost stream means the node stopped: two
		// reconnects (about 3 s), not the default five (about 20 s),
		// before the bridge takes over.
		return &mcp.StreamableClientTransport{Endpoint: "http://agentos-node" + mcpserver.Path, HTTPClient: hc, MaxRetries: 2}, hc.CloseIdleConnections
	}
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	up, done := socket()
	closers = append(closers, done)
	takeover := func(ctx context.Context) (mcp.Transport, error) {
		var lastErr error
		for attempt := range 20 {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(250 * time.Millisecond):
				}
			}
			if nodeServes(root) {
				t, done := socket()
				closers = append(closers, done)
				log.Warn("agentos serve --mcp: the serving node stopped; bridging to the node serving the root now", "root", root)
				return t, nil
			}
			// No node serves the root: become its node (another window
			// racing for it fails on the journal's lock, and bridges to
			// this one on its next attempt).
			t, stop, err := ownNode(ctx, cfg)
			if err == nil {
				closers = append(closers, stop)
				log.Warn("agentos serve --mcp: the serving node stopped; this MCP server now runs its own node on the root", "root", root)
				return t, nil
			}
			lastErr = err
		}
		return nil, fmt.Errorf("no node serves %s and none could be started: %w", root, lastErr)
	}
	err := mcpserver.BridgeWith(ctx, up, &mcp.StdioTransport{}, mcpserver.BridgeOptions{Logger: log, Reconnect: takeover})
	if errors.Is(err, mcpserver.ErrUpstreamClosed) {
		// The window's tools went with the node: say so and exit non-zero,
		// so the client shows the server as failed instead of toolless.
		return fmt.Errorf("the node serving %s stopped and this MCP server could not take over, so its tools are gone (%w); restart this MCP server in your client", root, err)
	}
	return err
}

// ownNode starts a node on cfg's root, serving its socket (so that other
// windows bridge to it), and returns an in-memory transport to its MCP
// server as the default process, and stop, which stops the node.
func ownNode(ctx context.Context, cfg host.Config) (mcp.Transport, func(), error) {
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	srv, err := rt.MCPServer()
	if err != nil {
		return nil, nil, errors.Join(err, rt.Close())
	}
	nctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- rt.Serve(nctx) }()
	clientT, serverT := mcp.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(nctx, rt.Agent(), serverT) }()
	stop := func() {
		cancel()
		<-ran
		if err := <-served; err != nil {
			cmdLogger(ctx).Error("agentos serve --mcp: the node's socket", "err", err)
		}
		if err := rt.Close(); err != nil {
			cmdLogger(ctx).Error("agentos serve --mcp: stopping the node", "err", err)
		}
	}
	return clientT, stop, nil
}
