// Package kerneltool is the kernel tool as its callers see it: the Tool
// type an agent hands its model and the MCP server serves, the errors a
// call answers with, the kernel tools' names, and the one-run clearance
// of the approval gate. It is a leaf: it imports nothing of agentos, so
// an agent and the MCP server call the kernel tools without importing the
// package that implements them (kerneltools).
package kerneltool

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// Tool is a kernel tool bound to one process: what an LLM SDK needs (name,
// description, JSON Schema of the parameters) and the function to call.
// Every call waits while the process is stopped, charges one tool call to
// its quota (refused calls too), and checks the process's capability.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Call runs the tool with args (a JSON object of the parameters) and
	// returns its JSON result. Errors wrap ErrInvalidArgs,
	// capability.ErrDenied, *capability.QuotaError or the tool's own.
	Call func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) `json:"-"`
}

// The kernel tools' errors. Their text keeps the "kernel:" prefix: they
// are the kernel tools' answers, as agents and logs have always seen them.

// ErrInvalidArgs: a kernel tool's arguments do not match its schema.
var ErrInvalidArgs = errors.New("kernel: invalid tool arguments")

// ErrUnknownTool: no kernel tool has the name.
var ErrUnknownTool = errors.New("kernel: unknown tool")

// names are the kernel tools, in the order they are served. IMPORTANT:
// the kernel tools' table (kerneltools) MUST list exactly these, in this
// order; its test checks it.
var names = []string{
	"list_files", "read_file", "write_file", "patch_file", "check_tool", "exec_sql",
	"search_tools", "forge_tool", "exec_tool", "remember", "recall", "forget",
}

// Names lists the kernel tools, in the order they are served.
func Names() []string { return slices.Clone(names) }

// confirmedKey carries a one-run clearance (ConfirmedRun).
type confirmedKey struct{}

type confirmed struct{ path, key string }

// ConfirmedRun returns ctx carrying a clearance for one run of the version
// key (the approval key, approval.Ask.Hash) of the tool at path (resolved):
// the exec_tool call made with it passes the approval gate for that
// version without recording an approval, so no other run or caller gets
// through on it. The MCP server uses it for a confirmation by a client
// whose token lacks the approve right on the tool. IMPORTANT: only the
// embedding Go code makes such a context; a version other than key is
// held as usual.
func ConfirmedRun(ctx context.Context, path, key string) context.Context {
	return context.WithValue(ctx, confirmedKey{}, confirmed{path, key})
}

// Confirmed reports whether ctx clears the run of path at version key
// (ConfirmedRun).
func Confirmed(ctx context.Context, path, key string) bool {
	c, ok := ctx.Value(confirmedKey{}).(confirmed)
	return ok && c.path == path && c.key == key
}
