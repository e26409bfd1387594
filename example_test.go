package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/leaktest"
	"github.com/agentos-run/agentos/kerneltools"
)

func TestMain(m *testing.M) {
	executor.WorkerMain() // the sandbox workers are this test binary re-executed
	goleak.VerifyTestMain(m, leaktest.Options...)
}

var quiet = slog.New(slog.DiscardHandler)

// Start a node over a new tool root, hand two kernel tools to a model's SDK
// and call them as the model would: write a tool, then run it in the
// sandbox.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(dir)
	rt, err := agentos.Start(context.Background(), &agentos.Options{Root: dir, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	tools, _ := rt.Tools("write_file", "exec_tool")
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	args, _ := json.Marshal(map[string]string{"path": "tools/hello.ts", "content": "/** Greets. */\nexport default function (a: { name: string }): string { return `hello ${a.name}`; }\n"})
	_, _ = tools[0].Call(context.Background(), args)
	out, _ := tools[1].Call(context.Background(), json.RawMessage(`{"path":"tools/hello.ts","args":{"name":"ada"}}`))
	var res kerneltools.ExecResult
	_ = json.Unmarshal(out, &res)
	fmt.Println(res.Success, string(res.Result.Result))
	// Output:
	// write_file
	// exec_tool
	// true "hello ada"
}

// Call a kernel tool as the default process, with a configuration given in
// code rather than read from the tool root's agentos.json.
func ExampleRuntime_Call() {
	dir, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(dir)
	cfg := agentos.Config{Isolation: "inprocess"}
	rt, err := agentos.Start(context.Background(), &agentos.Options{Root: dir, Config: &cfg, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	src, _ := json.Marshal(map[string]string{"path": "tools/add.ts", "content": "/** Adds. */\nexport default function (a: { x: number; y: number }): number { return a.x + a.y; }\n"})
	if _, err := rt.Call(context.Background(), "write_file", src); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/add.ts","args":{"x":2,"y":3}}`))
	var res kerneltools.ExecResult
	_ = json.Unmarshal(out, &res)
	fmt.Println(res.Success, string(res.Result.Result))
	// Output:
	// true 5
}

// Serve the node's web console: a request without a session is sent to
// the login page, which takes a capability token of the node.
func ExampleRuntime_UIHandler() {
	dir, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(dir)
	cfg := agentos.Config{Isolation: "inprocess"}
	rt, err := agentos.Start(context.Background(), &agentos.Options{Root: dir, Config: &cfg, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	srv := httptest.NewServer(rt.UIHandler()) // in production: over HTTPS (its cookie is Secure)
	defer srv.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(srv.URL + "/runs")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"))
	// Output:
	// 303 /login?next=%2Fruns
}
