package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/internal/clip"
	"github.com/agentos-run/agentos/journal"
)

// Socket is where a serving runtime listens, relative to the tool root:
// node/node.sock in the root's state directory (.agentos, agentos.StateDir).
var Socket = filepath.Join(".agentos", "node", "node.sock")

// Backend is what the socket answers with: the embedding runtime. Its
// methods are called concurrently, one request each.
type Backend interface {
	// Kernel is the client of the node's kernel actor: ps, events and
	// signals are messages to it.
	Kernel() kernelclient.Client
	// MaxArgs is the largest request body (tool arguments) accepted, in
	// bytes (limits.max_args_bytes).
	MaxArgs() int
	// Call runs a kernel tool as the node's default process.
	Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
	// Runs lists the journal's runs q selects, in q's order (see
	// journal.RunQuery).
	Runs(q journal.RunQuery) ([]RunSummary, error)
	// Run returns one run (id or unique prefix); journal.ErrNoRun and
	// journal.ErrAmbiguous are answered 404.
	Run(id string) (journal.Dump, error)
	// Exec runs a tool as 'agentos exec' does, recorded in the journal.
	// ctx ends when the caller hangs up or the node stops serving.
	Exec(ctx context.Context, req ExecRequest) (ExecReply, error)
	// Recover resumes unfinished runs and returns the JSON-encodable
	// report; a *StatusError chooses the status of a failure.
	Recover(ctx context.Context, req RecoverRequest) (any, error)
	// Metrics is the /metrics handler (nil: no /metrics).
	Metrics() http.Handler
	// MCP is the handler of MCP over streamable HTTP at /mcp, as the
	// default process (nil: no /mcp). The socket is its owner's alone, as
	// /v1/call is: 'agentos serve --mcp' bridges a stdio client to it.
	MCP() http.Handler
	// Kernels are the kernel actors of every member of the node's cluster
	// seen alive, this node's included, for ps and events across the
	// cluster; nil when the node is in no cluster.
	Kernels() []NodeKernel
	// Cluster returns the JSON-encodable report of the node's cluster
	// (agentos.ClusterReport); a *StatusError chooses the status of a
	// failure (404: the node is in no cluster).
	Cluster(ctx context.Context) (any, error)
	// Memory performs one operation on the agents' memory and returns the
	// JSON-encodable answer; a *StatusError chooses the status of a
	// failure (404: no such item, 400: a bad request).
	Memory(ctx context.Context, req MemoryRequest) (any, error)
}

// ApprovalBackend is what a Backend that has an approval gate answers
// (GET /v1/approvals, POST /v1/approve); a Backend without it has no such
// endpoints.
type ApprovalBackend interface {
	// Approvals lists the approval requests in state ("pending",
	// "approved", "denied"; "" every one), JSON-encodable.
	Approvals(state string) (any, error)
	// Decide approves or denies req.Target; a *StatusError chooses the
	// status of a failure (404: no such request or tool).
	Decide(req ApproveRequest) (any, error)
}

// RevokeBackend is what a Backend that revokes capability tokens answers
// (POST /v1/revoke); a Backend without it has no such endpoint.
type RevokeBackend interface {
	// Revoke revokes req.Target and returns the JSON-encodable report; a
	// *StatusError chooses the status of a failure (404: nothing knows
	// the target, 400: a bad request).
	Revoke(req RevokeRequest) (any, error)
}

// Options configure Serve.
type Options struct {
	// Root is the tool root; the socket is Root/Socket.
	Root string
	// Backend answers the requests.
	Backend Backend
	// Shutdowns, when set, tracks the server's shutdown, which goes on
	// after Serve returns (in-flight calls end when the runtime cancels
	// their runs): the runtime's Close MUST wait for it.
	Shutdowns *sync.WaitGroup
	// AfterListen, when set (tests), is called between Listen and the
	// socket's chmod: the moment a socket in a shared directory was
	// connectable.
	AfterListen func(path string)
}

// Serve answers on the tool root's node socket until ctx ends, then removes
// the socket (see the package documentation for the endpoints).
func Serve(ctx context.Context, opts Options) error {
	if opts.Backend == nil || opts.Root == "" {
		return errors.New("agentos: admin.Serve needs a tool root and a Backend")
	}
	path := filepath.Join(opts.Root, Socket)
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
	if opts.AfterListen != nil {
		opts.AfterListen(path)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: mux(ctx, opts.Backend), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	if opts.Shutdowns != nil {
		opts.Shutdowns.Add(1)
	}
	go func() {
		if opts.Shutdowns != nil {
			defer opts.Shutdowns.Done()
		}
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

// writeJSON answers v with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// readBody reads a request body of at most limit+extra bytes; on failure it
// answers (413 for a body over it, naming limits.max_args_bytes) and
// returns false.
func readBody(w http.ResponseWriter, r *http.Request, limit, extra int) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit+extra)))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Errorf("agentos: the request is over the node's limit of %d bytes of arguments: send less, or raise limits.max_args_bytes in agentos.json and restart the node", limit))
			return nil, false
		}
		fail(w, http.StatusBadRequest, err)
		return nil, false
	}
	return b, true
}

// readRequest decodes a JSON request body of at most the node's argument
// limit (plus room for the request's other fields) into v; on failure it
// answers and returns false.
func readRequest(w http.ResponseWriter, r *http.Request, limit int, v any) bool {
	b, ok := readBody(w, r, limit, 64<<10)
	if !ok {
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("agentos: the request is not the JSON object expected: %s", clip.Text(err.Error())))
		return false
	}
	return true
}

// NodeKernel is the kernel actor of one member of a cluster.
type NodeKernel struct {
	// Node is the member's remote address.
	Node   string
	Kernel kernelclient.Client
}

// NodeReply is one member's answer to a question asked of every member
// (ps, events across the cluster): its result, or why it did not answer.
type NodeReply struct {
	Node   string          `json:"node"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}
