package agentos

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
	"strconv"
	"syscall"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
)

// NodeSocket is where a serving runtime listens for the agentos CLI (ps,
// events, call), relative to the tool root. It is a unix socket readable by
// its owner only.
var NodeSocket = filepath.Join(StateDir, "node.sock")

// ErrNoNode: no runtime is serving the tool root (start one with
// 'agentos serve').
var ErrNoNode = errors.New("agentos: no running node")

// Serve answers the agentos CLI on the tool root's node socket until ctx
// ends, then removes the socket. Requests:
//
//	GET  /v1/ps                     the process table ([]kernel.ProcInfo)
//	GET  /v1/events?after=N&limit=M recent kernel events ([]kernel.Event)
//	POST /v1/call/TOOL              a kernel tool call as the default process
//	GET  /metrics                   Prometheus text (when the runtime owns its metrics)
func (rt *Runtime) Serve(ctx context.Context) error {
	path := filepath.Join(rt.root, NodeSocket)
	if err := removeStaleSocket(path); err != nil {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("agentos: listening on %s: %w", path, err)
	}
	defer os.Remove(path)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: rt.adminMux(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// removeStaleSocket removes a socket left by a node that died; a live node
// is an error.
func removeStaleSocket(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("agentos: a node is already serving this tool root (%s); stop it first", path)
	}
	return os.Remove(path)
}

func (rt *Runtime) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ps", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, rt.Kernel().PS())
	})
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		evs := rt.Kernel().Events(after, limit)
		if evs == nil {
			evs = []kernel.Event{}
		}
		writeJSON(w, http.StatusOK, evs)
	})
	mux.HandleFunc("POST /v1/call/{tool}", func(w http.ResponseWriter, r *http.Request) {
		args, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		out, err := rt.Call(r.Context(), r.PathValue("tool"), args)
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	if h := rt.MetricsHandler(); h != nil {
		mux.Handle("GET /metrics", h)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// NodeClient talks to the runtime serving a tool root.
type NodeClient struct {
	hc   *http.Client
	path string
}

// DialNode connects to the runtime serving the tool root at root. It fails
// with ErrNoNode when none is.
func DialNode(root string) (*NodeClient, error) {
	path := filepath.Join(root, NodeSocket)
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w in %s: start one with 'agentos serve --root %s'", ErrNoNode, root, root)
		}
		return nil, fmt.Errorf("agentos: connecting to the node at %s: %w", path, err)
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &NodeClient{hc: &http.Client{Transport: tr}, path: path}, nil
}

// Close releases the client's connections.
func (c *NodeClient) Close() { c.hc.CloseIdleConnections() }

// PS returns the node's process table.
func (c *NodeClient) PS(ctx context.Context) ([]kernel.ProcInfo, error) {
	var out []kernel.ProcInfo
	return out, c.do(ctx, "GET", "/v1/ps", nil, &out)
}

// Events returns the node's recent kernel events with Seq > after, at most
// limit (0: all kept).
func (c *NodeClient) Events(ctx context.Context, after uint64, limit int) ([]kernel.Event, error) {
	var out []kernel.Event
	return out, c.do(ctx, "GET", fmt.Sprintf("/v1/events?after=%d&limit=%d", after, limit), nil, &out)
}

// Call runs a kernel tool on the node as its default process.
func (c *NodeClient) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, "POST", "/v1/call/"+tool, args, &out)
}

func (c *NodeClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://node"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("agentos: the node at %s did not answer: %w", c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("agentos: the node answered %s", resp.Status)
	}
	return json.Unmarshal(b, out)
}
