package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// runCall calls a kernel tool exactly as an LLM would:
// agentos call [--root DIR] [--json] TOOL ARGS_JSON. When a node serves the
// tool root the call goes to it; otherwise a runtime starts for the call.
func runCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object: the tool's result (wrapped as {\"result\": ...} when it is not an object), or {\"error\": ...}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usagef("expected TOOL and ARGS_JSON (the kernel tools: %s)", strings.Join(kerneltools.ToolNames(), ", "))
	}
	tool := pos[0]
	if !slices.Contains(kerneltools.ToolNames(), tool) {
		return usagef("unknown tool %q: the kernel tools are %s", tool, strings.Join(kerneltools.ToolNames(), ", "))
	}
	abs, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	argsJSON, err := argsObject(pos[1:], `{"path": "tools/math/fib.ts"}`, cfg.MaxArgs())
	if err != nil {
		return err
	}
	cfg.Logger = cmdLogger(ctx)
	out, err := callTool(ctx, abs, cfg, tool, argsJSON)
	if err = quotaHint(err); err != nil {
		return err // run prints it, as {"error": ...} under --json
	}
	return printCallResult(stdout, out, *asJSON)
}

// printCallResult prints a kernel tool's result: text as it is (read_file's
// content), else as JSON, which under --json (asJSON) is one object (a
// result that is not one is wrapped as {"result": ...}). A failed tool run
// ({"success": false}) is errFailed, like agentos exec.
func printCallResult(stdout io.Writer, out json.RawMessage, asJSON bool) error {
	var v any
	_ = json.Unmarshal(out, &v)
	if !asJSON {
		if s, ok := v.(string); ok { // read_file: print the content as is
			_, err := io.WriteString(stdout, s)
			return err
		}
	}
	if _, isObject := v.(map[string]any); asJSON && !isObject {
		v = map[string]any{"result": v} // --json prints one object: list_files' array, read_file's text are wrapped
	}
	if err := fprintJSON(stdout, v); err != nil {
		return err
	}
	if m, ok := v.(map[string]any); ok && m["success"] == false {
		return errFailed // a failed tool run exits 1, like agentos exec
	}
	return nil
}

// callTool sends the call to the node serving root, or runs it on a
// runtime started for it.
func callTool(ctx context.Context, root string, cfg host.Config, tool string, args json.RawMessage) (json.RawMessage, error) {
	c, err := admin.Dial(root)
	if err == nil {
		defer c.Close()
		return c.Call(ctx, tool, args)
	}
	if !errors.Is(err, admin.ErrNoNode) {
		return nil, err
	}
	cfg.Root = root
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.Call(ctx, tool, args)
}
