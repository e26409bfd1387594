package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
)

// demoCrashChild is the hidden command the demo re-executes itself as:
// a runtime on DIR whose model is the parent's scripted server at URL,
// forging a slug tool. It parks the forge right after its first attempt
// (the answer is journaled, durably, before the forge logs the attempt)
// and waits to be killed.
const demoCrashChild = "__demo-forge-child"

const demoSlug = `/** Turns a title into a lowercase URL slug. @tag text */
export default function slugify(args: { title: string }): string {
  return args.title.toLowerCase().trim().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
}
`

const demoSlugTests = `const slugify = require('./slugify').default;
export default async function (): Promise<void> {
  const cases: Array<[string, string]> = [["Hello, World!", "hello-world"], ["  Agents forge tools  ", "agents-forge-tools"]];
  for (const [title, want] of cases) {
    const got = slugify({ title });
    if (got !== want) {
      throw new Error("slugify(" + JSON.stringify(title) + ") = " + JSON.stringify(got) + ", want " + JSON.stringify(want));
    }
  }
}
`

// parker parks the goroutine that logs the forge's first attempt.
type parker struct {
	slog.Handler
	once *sync.Once
}

func (h parker) WithAttrs(as []slog.Attr) slog.Handler {
	return parker{Handler: h.Handler.WithAttrs(as), once: h.once}
}
func (h parker) Enabled(context.Context, slog.Level) bool { return true }
func (h parker) WithGroup(g string) slog.Handler {
	return parker{Handler: h.Handler.WithGroup(g), once: h.once}
}
func (h parker) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "forge: attempt" {
		h.once.Do(func() {
			fmt.Println("ready")
			time.Sleep(5 * time.Minute) // until SIGKILL (or the parent is gone)
			os.Exit(4)
		})
	}
	return nil
}

func runDemoCrashChild(ctx context.Context, args []string) int {
	if len(args) != 2 {
		return exitUsage
	}
	cfg, err := host.LoadConfig(args[0])
	if err != nil {
		fmt.Println("error:", err)
		return exitFailed
	}
	cfg.Root, cfg.Isolation = args[0], "inprocess"
	cfg.LLM = host.LLMConfig{BaseURL: args[1], Model: "scripted"}
	cfg.Logger = slog.New(parker{Handler: slog.DiscardHandler, once: &sync.Once{}})
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		fmt.Println("error:", err)
		return exitFailed
	}
	defer rt.Close()
	_, err = rt.Call(ctx, "forge_tool", json.RawMessage(`{"spec":"turn a title into a url slug"}`))
	fmt.Println("error: the forge ended instead of being killed:", err)
	return exitFailed
}

// demoCrash kills a forge mid-way (SIGKILL of a real process) and resumes
// it: the model is not asked again for the answer the journal holds.
func demoCrash(ctx context.Context, dir string, cfg host.Config, stdout io.Writer) int {
	if os.Getenv("AGENTOS_LLM_MODEL") != "" {
		return 0 // shown with the scripted model only: a real one answers differently each time
	}
	args, _ := json.Marshal(map[string]string{"path": "tools/text/slugify.ts", "code": strings.Replace(demoSlug, `"-")`, `"_")`, 1), "tests": demoSlugTests})
	fixed, _ := json.Marshal(map[string]string{"path": "tools/text/slugify.ts", "code": demoSlug, "tests": demoSlugTests})
	srv := llmtest.NewServer([]llmtest.Step{
		{ToolCalls: []llm.ToolCall{{ID: "1", Name: "submit_tool", Arguments: string(args)}}},
		{ToolCalls: []llm.ToolCall{{ID: "2", Name: "submit_tool", Arguments: string(fixed)}}},
	})
	defer srv.Close()
	fmt.Fprintf(stdout, "\na forge killed mid-way (SIGKILL) and resumed from the journal\n")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stdout, "   cannot find this program to run it again: %v\n", err)
		return 1
	}
	child := exec.CommandContext(ctx, self, demoCrashChild, dir, srv.URL())
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		fmt.Fprintf(stdout, "   cannot start the child: %v\n", err)
		return 1
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = child.Process.Kill()
		_ = child.Wait()
		fmt.Fprintf(stdout, "   UNEXPECTED: the child said %q\n", line)
		return 1
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	fmt.Fprintf(stdout, "   process %d forged until its first attempt failed its tests, and was killed (model requests so far: %d)\n", child.Process.Pid, srv.Requests())
	cfg.Root, cfg.Logger = dir, slog.New(slog.DiscardHandler)
	cfg.LLM = host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}
	cfg.ResumeForges = true // the restart resumes the interrupted forge, as 'agentos serve' and 'recover' do
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stdout, "   cannot restart: %v\n", err)
		return 1
	}
	defer rt.Close()
	surprises := 0
	for _, r := range rt.ResumedForges() {
		last := r.Result.Attempts[len(r.Result.Attempts)-1]
		fmt.Fprintf(stdout, "   restarted: forge run %s resumed, %d attempts, the last passed=%v, %s registered\n", r.Run, len(r.Result.Attempts), last.Passed, r.Result.Path)
		if r.Err != "" || !last.Passed {
			surprises++
		}
	}
	fmt.Fprintf(stdout, "   model requests in all: %d (the first answer came from the journal, not from the model again)\n", srv.Requests())
	if srv.Requests() != 2 {
		fmt.Fprintf(stdout, "   UNEXPECTED: want 2\n")
		surprises++
	}
	return surprises
}
