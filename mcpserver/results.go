package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/vfs"
)

// The kinds of a failed call (ErrorKind), in its isError result. A failed
// run of a tool carries the executor's own kind instead (e.g. "timeout",
// "cancelled", "thrown"; see docs/SANDBOX.md).
const (
	KindInvalidArgs  = "invalid_args" // the arguments do not match the tool's schema
	KindUnknownTool  = "unknown_tool" // no such kernel tool
	KindNotFound     = "not_found"    // no such file (the executor's kind for a missing tool too)
	KindDenied       = "denied"       // the process's capability does not grant it (or the token is revoked or expired)
	KindQuota        = "quota"        // the process's quota is spent
	KindCancelled    = "cancelled"    // the client cancelled the call
	KindTimeout      = "timeout"      // the call's deadline passed
	KindConfirmation = "confirmation" // a high-risk run was not confirmed (no elicitation, or declined)
	KindError        = "error"        // any other failure: the message says what
)

// ErrorKind is the kind of a kernel call's error (the Kind constants).
func ErrorKind(err error) string {
	var qe *capability.QuotaError
	switch {
	case errors.Is(err, kerneltool.ErrInvalidArgs):
		return KindInvalidArgs
	case errors.Is(err, kerneltool.ErrUnknownTool):
		return KindUnknownTool
	case errors.Is(err, vfs.ErrNotFound):
		return KindNotFound
	case errors.As(err, &qe):
		return KindQuota
	case errors.Is(err, capability.ErrDenied), errors.Is(err, capability.ErrRevoked), errors.Is(err, capability.ErrExpired),
		errors.Is(err, capability.ErrUsedUp), errors.Is(err, capability.ErrInvalid):
		return KindDenied
	case errors.Is(err, context.Canceled):
		return KindCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindError
}

// failure is the isError result of a failed call.
func failure(kind, msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: kind + ": " + msg}},
		StructuredContent: map[string]any{"error": map[string]string{"kind": kind, "message": msg}},
	}
}

// plainResult is a kernel call's result: its JSON as text (a string
// result as the string itself), and as structuredContent when it is an
// object.
func plainResult(out []byte, err error) *mcp.CallToolResult {
	if err != nil {
		return failure(ErrorKind(err), err.Error())
	}
	return success(out)
}

func success(out []byte) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
	var str string
	switch t := bytes.TrimSpace(out); {
	case len(t) > 0 && t[0] == '{':
		res.StructuredContent = json.RawMessage(t)
	case len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &str) == nil:
		res.Content = []mcp.Content{&mcp.TextContent{Text: str}}
	}
	return res
}

// execOutcome is exec_tool's result (node.ExecResult) as far as a client
// is told.
type execOutcome struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Logs    []string        `json:"logs"`
	Error   *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	RunID string `json:"run_id,omitempty"`
}

// execResultOf is the result of an exec_tool call: a failed run is an
// isError result with the run's error kind and message. unwrap (a
// registered tool's call) answers the tool's own result, with the run id
// and logs in _meta; otherwise the whole exec_tool result.
func execResultOf(out []byte, err error, unwrap bool) *mcp.CallToolResult {
	if err != nil {
		return failure(ErrorKind(err), err.Error())
	}
	var o execOutcome
	if err := json.Unmarshal(out, &o); err != nil {
		return failure(KindError, "exec_tool answered what is not its result: "+err.Error())
	}
	meta := mcp.Meta{"agentos/run_id": o.RunID, "agentos/logs": o.Logs}
	if !o.Success {
		kind, msg := KindError, "the run failed"
		if o.Error != nil {
			kind, msg = o.Error.Kind, o.Error.Message
		}
		res := failure(kind, msg)
		if !unwrap {
			res.StructuredContent = json.RawMessage(out)
		}
		res.Meta = meta
		return res
	}
	if !unwrap {
		res := success(out)
		res.Meta = meta
		return res
	}
	res := success(o.Result)
	res.Meta = meta
	return res
}
