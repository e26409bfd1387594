package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/internal/host"
)

// runForge runs one forge from the terminal: agentos forge [--root DIR]
// [--json] "SPEC". The model comes from agentos.json's llm section or the
// environment (AGENTOS_LLM_BASE_URL, AGENTOS_LLM_MODEL, AGENTOS_LLM_API_KEY).
func runForge(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("forge", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object: the forge's result")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return usagef("expected one SPEC: what the tool must do, in quotes")
	}
	abs, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	cfg.Root = abs
	cfg.Logger = cmdLogger(ctx)
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	spec, _ := json.Marshal(map[string]string{"spec": pos[0]})
	out, callErr := rt.Call(ctx, "forge_tool", spec)
	callErr = quotaHint(callErr)
	var res forge.Result
	_ = json.Unmarshal(out, &res)
	if callErr != nil {
		return callErr // run prints it, as {"error": ...} under --json
	}
	if *asJSON {
		return fprintJSON(stdout, res)
	}
	switch {
	case res.Reused:
		fmt.Fprintf(stdout, "reused %s (score %.2f): no model call\n", res.Path, res.Score)
	default:
		for _, a := range res.Attempts {
			verdict := "passed check and tests"
			if !a.Passed {
				verdict = fmt.Sprintf("failed: %s", strings.Join(a.Errors, "; "))
			}
			fmt.Fprintf(stdout, "attempt %d: %s %s\n", a.N, a.Path, verdict)
		}
		fmt.Fprintf(stdout, "forged %s (tests in %s)", res.Path, res.Tests)
		if res.Commit != "" {
			fmt.Fprintf(stdout, ", commit %.12s", res.Commit)
		}
		fmt.Fprintf(stdout, "; %d tokens\n", res.Usage.TotalTokens)
	}
	return nil
}
