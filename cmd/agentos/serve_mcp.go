package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/mcpserver"
	"github.com/agentos-run/agentos/node/admin"
)

// MCPTokenFile is where 'agentos serve --mcp-http' writes a token for the
// default grants when the node has no capability.signing_key_env (so no
// 'agentos token' can mint one it verifies): mode 0600, valid while that
// node runs.
var MCPTokenFile = filepath.Join(agentos.StateDir, "mcp-token")

// serveMCP starts MCP over stdio (stdio) and/or streamable HTTP
// (cfg.MCP.Serve.HTTPAddr) for rt. done reports when the stdio session or
// the HTTP server ends; stop closes everything (call it before rt.Close).
func serveMCP(ctx context.Context, rt *agentos.Runtime, cfg agentos.Config, stdio bool, banner io.Writer) (done <-chan error, stop func(), err error) {
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
		hs = &http.Server{Handler: srv.HTTPHandler(opts), ReadHeaderTimeout: 10 * time.Second}
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
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = hs.Shutdown(sctx)
			cancel()
		}
		srv.Close()
		if tokenFile != "" {
			_ = os.Remove(tokenFile)
		}
	}
	return ch, stop, nil
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
// root, through its socket's /mcp (mcpserver.Bridge).
func bridgeMCP(ctx context.Context, root string) error {
	sock := filepath.Join(root, admin.Socket)
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	defer hc.CloseIdleConnections()
	// Over a local socket a lost stream means the node stopped: two
	// reconnects (about 3 s), not the default five (about 20 s), before the
	// bridge says so.
	up := &mcp.StreamableClientTransport{Endpoint: "http://agentos-node" + mcpserver.Path, HTTPClient: hc, MaxRetries: 2}
	err := mcpserver.Bridge(ctx, up, &mcp.StdioTransport{}, cmdLogger(ctx))
	if errors.Is(err, mcpserver.ErrUpstreamClosed) {
		// The window's tools went with the node: say so and exit non-zero,
		// so the client shows the server as failed instead of toolless.
		return fmt.Errorf("the node serving %s stopped, so this MCP server's tools are gone (%w); restart this MCP server in your client: 'agentos serve --mcp' then starts its own node on the root, or bridges to the node serving it", root, err)
	}
	return err
}
