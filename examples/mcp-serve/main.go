// Command mcp-serve embeds the agentos runtime and serves its tools over
// MCP (package mcpserver) to a client of the official Go SDK, connected in
// memory: the client lists the tools (the kernel tools and one per
// registered tool), writes a tool with write_file, is told the list
// changed, calls the new tool by its MCP name, and sees a failure as an
// isError result.
//
//	go run ./examples/mcp-serve
//
// It exits 1 if any of that does not happen.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/mcpserver"
)

const interest = `/** Computes compound interest: the final amount of a principal after years at a yearly rate. */
export default function interest(args: { principal: number; rate: number; years: number }): { amount: number } {
  const cents = 100;
  const amount = args.principal * Math.pow(1 + args.rate, args.years);
  return { amount: Math.round(amount * cents) / cents };
}
`

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: listed, written, announced, called, failed as isError")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-mcp-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rt, err := host.Start(ctx, host.Config{Root: root, Logger: quiet})
	if err != nil {
		return err
	}
	defer rt.Close()
	srv, err := mcpserver.New(mcpserver.Options{Node: rt.Node(), Registry: rt.Node().RegistryClient(), Logger: quiet})
	if err != nil {
		return err
	}
	defer srv.Close()

	// The server side: the default process's MCP server, on an in-memory
	// transport ('agentos serve --mcp' runs the same on stdin/stdout).
	clientT, serverT := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, rt.Agent(), serverT) }()

	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		return err
	}
	defer func() {
		cs.Close() // the server's session ends with the client's
		<-served
	}()
	names, err := toolNames(ctx, cs)
	if err != nil {
		return err
	}
	fmt.Printf("tools/list: %s\n", strings.Join(names, " "))

	if _, err := callOK(ctx, cs, "write_file", map[string]any{"path": "tools/finance/interest.ts", "content": interest}); err != nil {
		return err
	}
	select {
	case <-changed:
		fmt.Println("notifications/tools/list_changed received")
	case <-ctx.Done():
		return errors.New("no list_changed after write_file")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range tools.Tools {
		if t.Name == "finance_interest" {
			schema, _ := json.Marshal(t.InputSchema)
			fmt.Printf("new tool finance_interest: %q, inputSchema %s\n", t.Description, schema)
		}
	}
	res, err := callOK(ctx, cs, "finance_interest", map[string]any{"principal": 1000, "rate": 0.05, "years": 10})
	if err != nil {
		return err
	}
	got, _ := json.Marshal(res.StructuredContent)
	fmt.Printf("finance_interest -> structuredContent %s\n", got)
	if string(got) != `{"amount":1628.89}` {
		return fmt.Errorf("finance_interest answered %s, want {\"amount\":1628.89}", got)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "tools/missing.ts"}})
	if err != nil {
		return fmt.Errorf("a failing call must be an isError result, not a protocol error: %w", err)
	}
	if !res.IsError {
		return errors.New("reading a missing file succeeded")
	}
	fmt.Printf("read_file tools/missing.ts -> isError: %s\n", text(res))
	return nil
}

func toolNames(ctx context.Context, cs *mcp.ClientSession) ([]string, error) {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func callOK(ctx context.Context, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s failed: %s", name, text(res))
	}
	return res, nil
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
