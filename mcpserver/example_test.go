package mcpserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/mcpserver"
)

// An MCP client of the Go SDK lists a node's tools, writes a tool and
// calls it under the name derived from its path.
func Example() {
	root, _ := os.MkdirTemp("", "agentos-mcp-example-")
	defer os.RemoveAll(root)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	rt, err := host.Start(ctx, host.Config{Root: root, Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	srv, err := mcpserver.New(mcpserver.Options{Node: rt.Node(), Registry: rt.Node().RegistryClient(), Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// 'agentos serve --mcp' serves the same on stdin/stdout.
	clientT, serverT := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, rt.Agent(), serverT) }()
	changed := make(chan struct{}, 8)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, clientT, nil)
	if err != nil {
		panic(err)
	}
	defer func() { cs.Close(); <-served }()

	tools, _ := cs.ListTools(ctx, nil)
	fmt.Println(len(tools.Tools), "kernel tools, e.g.", tools.Tools[0].Name)

	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{
		"path":    "tools/text/shout.ts",
		"content": "/** Upper-cases a text. */\nexport default function shout(args: { s: string }): string {\n  return args.s.toUpperCase();\n}\n",
	}})
	<-changed // notifications/tools/list_changed: the registry has the tool
	fmt.Println("registered as", mcpserver.ToolName("tools/text/shout.ts", "tools"))

	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "text_shout", Arguments: map[string]any{"s": "hello"}})
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "tools/none.ts"}})
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 12 kernel tools, e.g. check_tool
	// registered as text_shout
	// HELLO
	// true not_found: read_file: read "tools/none.ts": not found
}
