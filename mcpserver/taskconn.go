package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskTransport serves tasks to the client of a transport Run serves
// (stdio: agentos serve --mcp) as HTTP does (serveTask): a tools/call that
// becomes a task and the tasks/* requests are answered here, as the
// identity id; every other message goes to the SDK's session.
//
// IMPORTANT: a task of such a client belongs to id.user, the process's
// "proc:<name>", which stays across restarts (the default process's name),
// so a client that started a task over stdio fetches it after the node
// restarted; no token's client sees it.
type taskTransport struct {
	inner mcp.Transport
	s     *Server
	id    ident
}

// Connect connects the inner transport and serves tasks on it.
func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c, s: t.s, id: t.id}, nil
}

// taskConn is a connection whose tasks requests are answered before the
// SDK reads them.
type taskConn struct {
	mcp.Connection
	s  *Server
	id ident
}

// Read returns the next message that is not a tasks request, answering
// those it meets.
func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		resp := c.answer(msg)
		if resp == nil {
			return msg, nil
		}
		if err := c.Connection.Write(ctx, resp); err != nil {
			return nil, err
		}
	}
}

// answer is the response to msg when it is a tasks request, else nil.
func (c *taskConn) answer(msg jsonrpc.Message) *jsonrpc.Response {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	var p taskParams
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &p) != nil {
		if req.Method == "tools/call" {
			return nil // the SDK says what is wrong with it
		}
		p = taskParams{}
	}
	result, code, err, ok := c.s.taskMethod(c.id, req.Method, p)
	if !ok {
		return nil
	}
	resp := &jsonrpc.Response{ID: req.ID}
	if err != nil {
		resp.Error = &jsonrpc.Error{Code: int64(code), Message: err.Error()}
		return resp
	}
	if resp.Result, err = json.Marshal(result); err != nil {
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return resp
}
