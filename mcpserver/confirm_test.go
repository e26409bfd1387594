package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/mcpserver"
)

// TestConfirmationFailsClosed: over HTTP with real SDK clients, a
// high-risk run goes on only on an answer to a confirmation the server
// asked, in that session, for the tool's content as it was asked, with
// confirm: true.
func TestConfirmationFailsClosed(t *testing.T) {
	e := newEnv(t, host.Config{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Anonymous: e.rt.Agent()}))
	t.Cleanup(hs.Close)
	write := func(content string) {
		t.Helper()
		if _, err := e.rt.Call(context.Background(), "write_file", mustJSON(map[string]string{"path": "tools/risky.ts", "content": content})); err != nil {
			t.Fatal(err)
		}
	}
	write(riskyTool)
	connect := func(h func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		t.Helper()
		var opts *mcp.ClientOptions
		if h != nil {
			opts = &mcp.ClientOptions{ElicitationHandler: h}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "confirm", Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.Path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	args := map[string]any{"path": "tools/risky.ts", "args": map[string]any{"n": 21}}
	refused := func(what string, res *mcp.CallToolResult, want string) {
		t.Helper()
		if !res.IsError || !strings.HasPrefix(text(res), mcpserver.KindConfirmation+": ") || !strings.Contains(text(res), want) {
			t.Errorf("%s: %v %s, want refused (%q)", what, res.IsError, text(res), want)
		}
	}

	// An answer nobody asked for, from a client without elicitation: no
	// state, or a forged one.
	plain := connect(nil)
	yes := mcp.InputResponseMap{"agentos-confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
	for _, state := range []string{"", "eyJzIjoiIn0.forged"} {
		res, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec_tool", Arguments: args, InputResponses: yes, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		refused("an unsolicited confirmation (state "+state+")", res, "nobody asked for")
	}

	// accept without confirm, or with confirm false.
	for _, content := range []map[string]any{nil, {"confirm": false}} {
		cs := connect(func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		})
		refused("accept with "+mustString(content), call(t, cs, "exec_tool", args), "without confirm: true")
	}

	// The tool is rewritten while the user decides: the answer is about
	// the old content.
	changing := connect(func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		write(riskyTool + "\n// rewritten while the user decided\n")
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	})
	refused("a tool changed during confirmation", call(t, changing, "exec_tool", args), "changed")

	// Confirmed properly, it runs.
	ok := connect(func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	})
	if res := call(t, ok, "exec_tool", args); res.IsError || structured(t, res)["result"] != 42.0 {
		t.Errorf("confirmed: %v %s", res.IsError, text(res))
	}
}

func mustString(v any) string { return string(mustJSON(v)) }

// The version the user confirms is the version approved: a tool rewritten
// between the read the confirmation is tied to and the gate's judgment is
// refused, and the rewritten version is not approved.
func TestConfirmationApprovesTheVersionConfirmed(t *testing.T) {
	e := newEnv(t, host.Config{})
	yes := e.connect(t, e.rt.Agent(), &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}})
	mustOK(t, "write_file", call(t, yes, "write_file", map[string]any{"path": "tools/risky.ts", "content": riskyTool}))
	swapped := strings.Replace(riskyTool, "* 2", "* 3", 1)
	var calls int
	mcpserver.SetAfterSourceHash(func(string) {
		// The answer's round: the file changes after the read the
		// confirmation is checked against.
		if calls++; calls == 2 {
			if err := os.WriteFile(filepath.Join(e.rt.Root(), "tools", "risky.ts"), []byte(swapped), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
	defer mcpserver.SetAfterSourceHash(nil)
	res := call(t, yes, "exec_tool", map[string]any{"path": "tools/risky.ts", "args": map[string]any{"n": 21}})
	if !res.IsError || !strings.Contains(text(res), "changed") {
		t.Fatalf("a version swapped during the confirmation: %s", text(res))
	}
	rs, err := e.rt.Approvals(approval.StateApproved)
	if err != nil || len(rs) != 0 {
		t.Fatalf("approved without being confirmed: %+v %v", rs, err)
	}
}
