package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

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
	fmt.Fprintf(banner, "web console at http://%s/\n", ln.Addr())
	if cfg.UI.Anonymous {
		fmt.Fprintln(banner, "the console serves without a login, as the default process (--ui-anonymous, loopback only)")
	} else {
		fmt.Fprintln(banner, "the console asks for a capability token: mint one with 'agentos token --grant read:tools/ --grant exec:tools/ --grant write:tools/'")
	}
	return func() {
		// An open event stream would hold Shutdown: a short grace, then close.
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), mcpShutdownGrace)
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		cancel()
	}, nil
}
