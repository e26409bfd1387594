package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/mcpserver"
)

// afterListen, when set (tests), is called between Listen and the socket's
// chmod: the moment a socket in a shared directory was connectable.
var afterListen func(path string)

// Serve answers the agentos CLI on the tool root's node socket
// (admin.Socket: a unix socket of mode 0600 in a directory of mode 0700)
// until ctx ends, then removes the socket. The endpoints (ps, events,
// signal, call, runs, exec, recover, metrics) are package admin's; ps,
// events and signals are messages to the node's kernel actor, the rest is
// this runtime's. A client is admin.Dial(root).
func (rt *Runtime) Serve(ctx context.Context) error {
	return admin.Serve(ctx, admin.Options{Root: rt.root, Backend: adminBackend{rt}, Shutdowns: &rt.serving, AfterListen: afterListen})
}

// adminBackend is what the runtime gives the admin socket (admin.Backend).
type adminBackend struct{ rt *Runtime }

func (b adminBackend) Kernel() kernelclient.Client { return b.rt.Node().KernelClient() }

func (b adminBackend) MaxArgs() int { return b.rt.cfg.MaxArgs() }

func (b adminBackend) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return b.rt.Call(ctx, tool, args)
}

func (b adminBackend) Metrics() http.Handler { return b.rt.MetricsHandler() }

// MCP is the socket's /mcp: the runtime's MCP server as the default
// process (the socket is the owner's alone, as /v1/call is). Its sessions
// never time out and are not capped: they are the owner's bridged windows
// ('serve --mcp' on a served root), which may sit idle for hours and MUST
// NOT lose their tools for it.
func (b adminBackend) MCP() http.Handler {
	srv, err := b.rt.MCPServer()
	if err != nil {
		b.rt.log.Warn("agentos: no MCP on the node socket", slog.Any("err", err))
		return nil
	}
	return srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: b.rt.agent, SessionTimeout: -1, MaxSessions: -1})
}

func (b adminBackend) Runs(q journal.RunQuery) ([]admin.RunSummary, error) {
	var out []admin.RunSummary
	err := b.rt.j.EachRun(q, func(m journal.RunMeta) error {
		out = append(out, admin.RunSummary{RunMeta: m, Calls: m.Calls})
		return nil
	})
	return out, err
}

func (b adminBackend) Run(id string) (journal.Dump, error) { return b.rt.j.Export(id) }
