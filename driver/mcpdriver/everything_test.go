package mcpdriver_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
	"github.com/agentos-run/agentos/internal/npmtest"
)

// EverythingPackage is the published MCP server the tests use as a real
// third-party upstream (its echo and get-sum tools).
const EverythingPackage = "@modelcontextprotocol/server-everything@2026.8.31"

// A published server from npm, spoken to over stdio: its tools list,
// generated modules, and calls.
func TestPublishedServerEverything(t *testing.T) {
	dir := npmtest.Install(t, EverythingPackage)
	node := npmtest.Node(t)
	main := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	t.Setenv("MCP_PASSED_TO_SERVER", "passed")
	t.Setenv("MCP_KEPT_FROM_SERVER", "kept")
	c := newClient(t, mcpdriver.Options{Servers: map[string]mcpdriver.Server{"everything": {Command: []string{node, main, "stdio"}, Env: []string{"MCP_PASSED_TO_SERVER"}, Timeout: time.Minute}}, CacheDir: t.TempDir()})
	names, err := c.List(context.Background(), "everything")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools: %v", names)
	if !contains(names, "everything/echo.ts") {
		t.Fatalf("no echo tool in %v", names)
	}
	src, err := c.ReadFile(context.Background(), "everything/echo.ts")
	if err != nil || !strings.Contains(string(src), "export interface EchoInput") || !strings.Contains(string(src), "message: string;") {
		t.Fatalf("echo's module: %v\n%s", err, src)
	}
	out, err := call(t, c, "everything", "echo", `{"message": "hello from agentos"}`)
	if err != nil || !strings.Contains(string(out), "hello from agentos") {
		t.Fatalf("echo: %s %v", out, err)
	}
	sum := "get-sum"
	if !contains(names, "everything/get-sum.ts") {
		sum = "add"
	}
	out, err = call(t, c, "everything", sum, `{"a": 2, "b": 40}`)
	if err != nil || !strings.Contains(string(out), "42") {
		t.Fatalf("%s: %s %v", sum, out, err)
	}
	// A call with arguments the server's schema refuses.
	_, err = call(t, c, "everything", "echo", `{"message": 7}`)
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != mcpdriver.CodeToolError || !strings.Contains(de.Message, "message") {
		t.Fatalf("a bad argument: %v", err)
	}
	// The server's environment: PATH, HOME and the variables named in env,
	// nothing else of ours.
	if contains(names, "everything/get-env.ts") {
		out, err := call(t, c, "everything", "get-env", `{}`)
		if err != nil || !strings.Contains(string(out), "MCP_PASSED_TO_SERVER") || strings.Contains(string(out), "MCP_KEPT_FROM_SERVER") {
			t.Fatalf("the server's environment: %s %v", out, err)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
