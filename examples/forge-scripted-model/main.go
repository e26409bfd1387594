// Command forge-scripted-model forges a tool against a scripted model: an
// in-process HTTP server on loopback speaking the OpenAI chat-completions
// protocol (package driver/llm/llmtest) answers the forge with a tool and
// its tests. The first answer has a bug its own tests catch; the forge
// sends the failure back, the second answer passes and is registered. The
// forged tool is then run with exec_tool, and a similar spec reuses it
// without asking the model again. No network, no API key.
//
//	go run ./examples/forge-scripted-model
//
// It exits 1 if the forge, the run or the reuse does not happen as described.
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

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

const (
	// slug as the model writes it first: it forgets to lower-case.
	slugBuggy = `/** Turns a title into a URL slug: lower case, words joined by dashes. @tag text */
export default function slug(args: { title: string }): string {
  return args.title.trim().split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0).join("-");
}
`
	slugGood = `/** Turns a title into a URL slug: lower case, words joined by dashes. @tag text */
export default function slug(args: { title: string }): string {
  return args.title.trim().toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0).join("-");
}
`
	slugTests = `const slug = require('./slug').default;
export default async function (): Promise<void> {
  const got = slug({ title: "  Hello, Agent World! " });
  if (got !== "hello-agent-world") {
    throw new Error("slug: got " + JSON.stringify(got) + ", want \"hello-agent-world\"");
  }
}
`
)

// submit is the scripted model answering with a submit_tool call, the
// forge's way for a model to hand in a tool and its tests.
func submit(code string) llmtest.Step {
	args, _ := json.Marshal(map[string]string{"path": "tools/text/slug.ts", "code": code, "tests": slugTests})
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}
}

// forgeResult is the part of forge_tool's answer this example reads.
type forgeResult struct {
	Reused   bool    `json:"reused"`
	Path     string  `json:"path"`
	Score    float64 `json:"score"`
	Tests    string  `json:"tests"`
	Attempts []struct {
		N      int      `json:"n"`
		Passed bool     `json:"passed"`
		Errors []string `json:"errors"`
	} `json:"attempts"`
}

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: forged on the second attempt, ran, reused")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-forge-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	// The second answer checks that the forge told the model why the
	// first one failed.
	fix := submit(slugGood)
	fix.Check = func(r llmtest.Received) error {
		last := r.Messages[len(r.Messages)-1].Content
		if !strings.Contains(last, "hello-agent-world") {
			return errors.New("the forge did not send the failing test back to the model")
		}
		return nil
	}
	model := llmtest.NewServer([]llmtest.Step{submit(slugBuggy), fix})
	defer model.Close()
	fmt.Println("scripted model at", model.URL())

	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var cfg agentos.Config // the defaults, and a model: the scripted server
	cfg.LLM.BaseURL, cfg.LLM.Model = model.URL(), "scripted"
	rt, err := agentos.Start(ctx, &agentos.Options{Root: root, Config: &cfg, Logger: quiet})
	if err != nil {
		return err
	}
	defer rt.Close()

	forge := func(spec string) (forgeResult, error) {
		args, _ := json.Marshal(map[string]string{"spec": spec})
		out, err := rt.Call(ctx, "forge_tool", args)
		var res forgeResult
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		return res, err
	}

	// 1. Forge: the registry has nothing that fits, so the model writes it.
	res, err := forge("a tool that turns a title into a URL slug")
	if err != nil {
		return fmt.Errorf("forge_tool: %w (model: %v)", err, model.Err())
	}
	fmt.Println("forge_tool \"a tool that turns a title into a URL slug\"")
	for _, a := range res.Attempts {
		if a.Passed {
			fmt.Printf("  attempt %d: check and tests passed\n", a.N)
		} else {
			fmt.Printf("  attempt %d: %s\n", a.N, firstLine(strings.Join(a.Errors, "; ")))
		}
	}
	if len(res.Attempts) != 2 || res.Attempts[0].Passed || !res.Attempts[1].Passed || model.Err() != nil {
		return fmt.Errorf("want a failed then a passing attempt, got %+v (model: %v)", res.Attempts, model.Err())
	}
	fmt.Printf("  registered %s (tests in %s)\n", res.Path, res.Tests)

	// 2. Run the forged tool, exactly as an agent would.
	out, err := rt.Call(ctx, "exec_tool", json.RawMessage(`{"path":"`+res.Path+`","args":{"title":"Actors that really exchange messages"}}`))
	if err != nil {
		return fmt.Errorf("exec_tool %s: %w", res.Path, err)
	}
	var run struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(out, &run); err != nil || !run.Success || string(run.Result) != `"actors-that-really-exchange-messages"` {
		return fmt.Errorf("exec_tool %s: %s", res.Path, out)
	}
	fmt.Printf("exec_tool %s -> %s\n", res.Path, run.Result)

	// 3. A similar spec reuses the registered tool: no model call.
	asked := model.Requests()
	res, err = forge("url slug of a title")
	if err != nil || !res.Reused || model.Requests() != asked {
		return fmt.Errorf("the second forge should reuse %s without the model: %+v %v (model asked %d more times)", "tools/text/slug.ts", res, err, model.Requests()-asked)
	}
	fmt.Printf("forge_tool \"url slug of a title\": reused %s (score %.2f), no model call\n", res.Path, res.Score)
	fmt.Printf("the model was asked %d times in all\n", model.Requests())
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
