package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/journal"
)

// Client talks to the runtime serving a tool root.
type Client struct {
	hc   *http.Client
	path string
}

// Dial connects to the runtime serving the tool root at root. It fails
// with ErrNoNode when none is.
func Dial(root string) (*Client, error) {
	path := filepath.Join(root, Socket)
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
	return &Client{hc: &http.Client{Transport: tr}, path: path}, nil
}

// Close releases the client's connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// PS returns the node's process table.
func (c *Client) PS(ctx context.Context) ([]kernelclient.ProcInfo, error) {
	var out []kernelclient.ProcInfo
	return out, c.do(ctx, "GET", "/v1/ps", nil, &out)
}

// Events returns the node's recent kernel events with Seq > after, at most
// limit (0: all kept).
func (c *Client) Events(ctx context.Context, after uint64, limit int) ([]kernelclient.Event, error) {
	var out []kernelclient.Event
	return out, c.do(ctx, "GET", fmt.Sprintf("/v1/events?after=%d&limit=%d", after, limit), nil, &out)
}

// Signal signals a process of the node: "kill", "term", "stop" or "cont".
func (c *Client) Signal(ctx context.Context, req SignalRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var out struct{}
	return c.do(ctx, "POST", "/v1/signal", body, &out)
}

// Snapshot snapshots a process of the node (POST /v1/snapshot).
func (c *Client) Snapshot(ctx context.Context, req SnapshotRequest) (kernelclient.SnapshotInfo, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return kernelclient.SnapshotInfo{}, err
	}
	var out kernelclient.SnapshotInfo
	return out, c.do(ctx, "POST", "/v1/snapshot", body, &out)
}

// Restore restores a snapshot of the node's journal (POST /v1/restore).
func (c *Client) Restore(ctx context.Context, req RestoreRequest) (RestoreReply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return RestoreReply{}, err
	}
	var out RestoreReply
	return out, c.do(ctx, "POST", "/v1/restore", body, &out)
}

// Call runs a kernel tool on the node as its default process.
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, "POST", "/v1/call/"+tool, args, &out)
}

// Runs lists the runs of the node's journal q selects, in q's order (see
// journal.RunQuery).
func (c *Client) Runs(ctx context.Context, q journal.RunQuery) ([]RunSummary, error) {
	v := url.Values{}
	if q.Oldest {
		v.Set("oldest", "true")
	}
	if q.Before != "" {
		v.Set("before", q.Before)
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out []RunSummary
	return out, c.do(ctx, "GET", "/v1/runs?"+v.Encode(), nil, &out)
}

// Run returns one run of the node's journal (id or a unique prefix).
func (c *Client) Run(ctx context.Context, id string) (journal.Dump, error) {
	var out journal.Dump
	return out, c.do(ctx, "GET", "/v1/runs/"+url.PathEscape(id), nil, &out)
}

// Exec runs a tool on the node as 'agentos exec' does, recorded in the
// node's journal.
func (c *Client) Exec(ctx context.Context, req ExecRequest) (ExecReply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return ExecReply{}, err
	}
	var out ExecReply
	return out, c.do(ctx, "POST", "/v1/exec", body, &out)
}

// Recover asks the node to resume unfinished runs (see RecoverRequest) and
// decodes its report into out (the runtime's report type,
// agentos.NodeRecovery).
func (c *Client) Recover(ctx context.Context, req RecoverRequest, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/v1/recover", body, out)
}

// ClusterPS returns the process table of every member of the node's
// cluster: one NodeReply each, its Result a []kernelclient.ProcInfo.
func (c *Client) ClusterPS(ctx context.Context) ([]NodeReply, error) {
	var out []NodeReply
	return out, c.do(ctx, "GET", "/v1/cluster/ps", nil, &out)
}

// ClusterEvents returns the recent kernel events of every member of the
// node's cluster (at most limit each; 0: all kept): one NodeReply each, its
// Result a []kernelclient.Event.
func (c *Client) ClusterEvents(ctx context.Context, limit int) ([]NodeReply, error) {
	var out []NodeReply
	return out, c.do(ctx, "GET", fmt.Sprintf("/v1/cluster/events?limit=%d", limit), nil, &out)
}

// Cluster asks the node for its cluster's report and decodes it into out
// (agentos.ClusterReport).
func (c *Client) Cluster(ctx context.Context, out any) error {
	return c.do(ctx, "GET", "/v1/cluster", nil, out)
}

// Approvals lists the node's approval requests in state ("" every one)
// and decodes them into out ([]approval.Request).
func (c *Client) Approvals(ctx context.Context, state string, out any) error {
	return c.do(ctx, "GET", "/v1/approvals?state="+url.QueryEscape(state), nil, out)
}

// Approve approves or denies (req.Deny) an approval request on the node and
// decodes the decided request into out (approval.Request).
func (c *Client) Approve(ctx context.Context, req ApproveRequest, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/v1/approve", body, out)
}

// Memory performs one operation on the agents' memory (see MemoryRequest)
// and decodes the answer into out.
func (c *Client) Memory(ctx context.Context, req MemoryRequest, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/v1/memory", body, out)
}

// Revoke revokes capability tokens on the node (see RevokeRequest) and
// decodes the report into out (agentos.RevokeReport).
func (c *Client) Revoke(ctx context.Context, req RevokeRequest, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/v1/revoke", body, out)
}

// AnswerError is what the Client returns when the node refused a request:
// the answer's HTTP status (http.StatusNotFound: the process, snapshot or
// run it names is not there) and its message, which is the error's text.
type AnswerError struct {
	Status  int
	Message string
}

func (e *AnswerError) Error() string { return e.Message }

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
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
			return &AnswerError{Status: resp.StatusCode, Message: e.Error}
		}
		return &AnswerError{Status: resp.StatusCode, Message: fmt.Sprintf("agentos: the node answered %s", resp.Status)}
	}
	return json.Unmarshal(b, out)
}
