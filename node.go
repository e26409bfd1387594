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
	"github.com/agentos-run/agentos/internal/clip"
)

// NodeSocket is where a serving runtime listens for the agentos CLI (ps,
// events, call), relative to the tool root. It is a unix socket of mode 0600
// in a directory of mode 0700 that Serve creates (and checks) before it
// listens: another user can never connect, not even in the moment between
// the socket's creation and its chmod.
var NodeSocket = filepath.Join(StateDir, "node", "node.sock")

// afterListen, when set (tests), is called between Listen and the socket's
// chmod: the moment a socket in a shared directory was connectable.
var afterListen func(path string)

// ErrNoNode: no runtime is serving the tool root (start one with
// 'agentos serve').
var ErrNoNode = errors.New("agentos: no running node")

// Serve answers the agentos CLI on the tool root's node socket until ctx
// ends, then removes the socket. Requests:
//
//	GET  /v1/ps                     the process table ([]kernel.ProcInfo)
//	GET  /v1/events?after=N&limit=M recent kernel events ([]kernel.Event)
//	POST /v1/call/TOOL              a kernel tool call as the default process
//	GET  /v1/runs, /v1/runs/{id}    the journal's runs, one run (node_journal.go)
//	POST /v1/exec, /v1/recover      a tool run as 'agentos exec' does; resume runs
//	GET  /metrics                   Prometheus text (when the runtime owns its metrics)
//
// A request body over limits.max_args_bytes is answered 413 with an error
// naming the limit, before more of it is read.
func (rt *Runtime) Serve(ctx context.Context) error {
	path := filepath.Join(rt.root, NodeSocket)
	dir := filepath.Dir(path)
	if err := privateDir(dir); err != nil {
		return err
	}
	if err := removeStaleSocket(path); err != nil {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("agentos: listening on %s: %w", path, err)
	}
	defer os.Remove(dir) // only when empty: after the socket
	defer os.Remove(path)
	if afterListen != nil {
		afterListen(path)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: rt.adminMux(ctx), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	// The shutdown goes on after Serve returns (in-flight calls end when
	// Close cancels their runs); Close waits for it.
	rt.serving.Add(1)
	go func() {
		defer rt.serving.Done()
		select {
		case <-ctx.Done():
		case <-served:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err = srv.Serve(ln)
	close(served)
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// privateDir makes dir a directory only its owner can enter (0700), owned
// by this process's user: the socket inside is unreachable by others from
// its creation on, whatever the umask.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("agentos: creating the node socket's directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || (ok && int(st.Uid) != os.Geteuid()) {
		return fmt.Errorf("agentos: %s must be a directory owned by this user (uid %d), not a link or another user's: remove it and start again", dir, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
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

func (rt *Runtime) adminMux(ctx context.Context) *http.ServeMux {
	mux := http.NewServeMux()
	rt.journalRoutes(ctx, mux) // runs, trace, exec, recover: see node_journal.go
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
		limit := rt.cfg.MaxArgs()
		args, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("agentos: the request is over the node's limit of %d bytes of arguments: send less, or raise limits.max_args_bytes in agentos.json and restart the node", limit)})
				return
			}
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": clip.Text(err.Error())})
			return
		}
		out, err := rt.Call(r.Context(), r.PathValue("tool"), args)
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": clip.N(err.Error(), 4096)})
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
