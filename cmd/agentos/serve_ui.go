package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/internal/host"
)

// serveUI serves the web console at cfg.UI.Addr (docs/CONSOLE.md) and
// prints its URL. It returns the function that stops it (call it before
// rt.Close); without an address it does nothing. Anonymous access on an
// address that is not loopback is refused before anything listens.
func serveUI(ctx context.Context, rt *host.Runtime, cfg host.Config, banner io.Writer) (stop func(), err error) {
	addr := cfg.UI.Addr
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the console cannot listen on %s: %w (choose another --ui address)", addr, err)
	}
	srv, err := rt.Console(console.Options{Addr: ln.Addr().String(), Anonymous: cfg.UI.Anonymous, Logger: cmdLogger(ctx)})
	if err != nil {
		ln.Close()
		return nil, usagef("%v", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cmdLogger(ctx).Error("agentos serve: the console stopped", "err", err)
		}
	}()
	// The token file is written before the URL is printed: whoever reads
	// the URL finds the file it names.
	var login bytes.Buffer
	tokenFile, err := uiLoginBanner(rt, cfg, &login)
	if err != nil {
		hs.Close()
		srv.Close()
		return nil, err
	}
	fmt.Fprintf(banner, "web console at http://%s/\n%s", ln.Addr(), login.Bytes())
	return func() {
		// An open event stream would hold Shutdown: a short grace, then close.
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), mcpShutdownGrace)
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		cancel()
		if tokenFile != "" {
			_ = os.Remove(tokenFile)
		}
	}, nil
}

// UITokenFile is where 'agentos serve --ui' writes a token for the default
// grants when the node has no capability.signing_key_env (so no 'agentos
// token' can mint one it verifies): mode 0600, valid while that node runs.
var UITokenFile = filepath.Join(host.StateDir, "ui-token")

// uiLoginBanner says how to log in to the console; without a shared key it
// writes the token file it names (returned, to be removed at the end).
func uiLoginBanner(rt *host.Runtime, cfg host.Config, banner io.Writer) (string, error) {
	if cfg.UI.Anonymous {
		fmt.Fprintln(banner, "the console serves without a login, as the default process (--ui-anonymous, loopback only)")
		return "", nil
	}
	if key, _ := cfg.CapabilityKey(); key != nil {
		fmt.Fprintln(banner, "the console asks for a capability token: mint one with 'agentos token --grant read:tools/ --grant exec:tools/ --grant write:tools/'")
		return "", nil
	}
	tok := rt.Kernel().Authority().Mint("console", cfg.DefaultGrants(), capability.Caveats{})
	path := filepath.Join(rt.Root(), UITokenFile)
	if err := os.WriteFile(path, []byte(tok.Encode()+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing the console's token: %w", err)
	}
	fmt.Fprintf(banner, "the console asks for a capability token: one for the default grants, valid while this node runs, is in %s (set capability.signing_key_env to mint lasting ones with 'agentos token')\n", path)
	return path, nil
}
