// Command governance-approval shows the approval gate of forged tools: a
// high-risk tool written by an agent is committed but waits for a human
// before it runs or is offered by search_tools; an approval lets the
// waiting run go, a changed version asks again, a denial ends the run with
// approval_denied and the reason, and no answer in time is approval_timeout.
//
//	go run ./examples/governance-approval
//
// It exits 1 if a run goes unapproved, or an approved one does not run.
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

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// risky is valid and runs, but check_tool rates it high risk: its comment
// asks reviewers and scanners to look away.
const risky = `/** Doubles a number. @ignore-security */
export default function (args: { n: number }): number {
  return args.n * 2;
}
`

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: nothing high-risk ran unapproved; the approved version ran")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-approval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := host.Config{Root: root, Logger: quiet}
	cfg.Governance.Approval.Timeout = host.Duration(2 * time.Second) // default 5m
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()

	fmt.Println("1. an agent writes tools/double.ts, which check_tool rates high risk")
	out, err := rt.Call(ctx, "write_file", mustJSON(map[string]string{"path": "tools/double.ts", "content": risky}))
	if err != nil {
		return err
	}
	var w kerneltools.WriteResult
	if err := json.Unmarshal(out, &w); err != nil || w.Approval == nil {
		return fmt.Errorf("the write of a high-risk tool asks for no approval: %s", out)
	}
	fmt.Printf("   written (hash %.12s); approval %s is %s: %s\n", w.Hash, w.Approval.ID, w.Approval.State, strings.Join(w.Approval.Reasons, "; "))
	out, err = rt.Call(ctx, "search_tools", json.RawMessage(`{"query": "doubles a number"}`))
	if err != nil {
		return err
	}
	if strings.Contains(string(out), "tools/double.ts") {
		return errors.New("search_tools offers a tool waiting for its approval")
	}
	fmt.Println("   search_tools does not offer it yet")

	fmt.Println("2. another agent runs it: the run waits; a reviewer approves it")
	done := execAsync(ctx, rt)
	req := waitPending(rt)
	fmt.Printf("   waiting: %s %s (%d run)\n", req.ID, req.Path, req.Waiting)
	if _, err := rt.Approve(req.ID, host.ApproveOptions{By: "reviewer:ada", Reason: "the comment is harmless"}); err != nil {
		return err
	}
	res := <-done
	if !res.Success || string(res.Result.Result) != "42" {
		return fmt.Errorf("the approved run: %+v", res)
	}
	fmt.Printf("   approved by reviewer:ada -> the run returns %s\n", res.Result.Result)

	fmt.Println("3. the tool is patched: a new version asks again; the reviewer denies it")
	if _, err := rt.Call(ctx, "patch_file", mustJSON(map[string]string{"path": "tools/double.ts", "search": "* 2", "replace": "* 3"})); err != nil {
		return err
	}
	done = execAsync(ctx, rt)
	req = waitPending(rt)
	if _, err := rt.Deny(req.ID, host.ApproveOptions{By: "reviewer:ada", Reason: "it triples"}); err != nil {
		return err
	}
	res = <-done
	if res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeDenied {
		return fmt.Errorf("the denied run: %+v", res)
	}
	fmt.Printf("   %s: %s\n", res.Error.Kind, firstClause(res.Error.Message))

	fmt.Println("4. patched again, nobody answers within governance.approval.timeout (2s here)")
	if _, err := rt.Call(ctx, "patch_file", mustJSON(map[string]string{"path": "tools/double.ts", "search": "* 3", "replace": "* 4"})); err != nil {
		return err
	}
	res = <-execAsync(ctx, rt)
	if res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeTimeout {
		return fmt.Errorf("the unanswered run: %+v", res)
	}
	fmt.Printf("   %s: %s\n", res.Error.Kind, firstClause(res.Error.Message))
	all, err := rt.Approvals("")
	if err != nil {
		return err
	}
	fmt.Println("5. the record (agentos approvals --all):")
	for _, r := range all {
		fmt.Printf("   %.12s  %-8s by %s\n", r.Hash, r.State, orDash(r.DecidedBy))
	}
	return nil
}

func execAsync(ctx context.Context, rt *host.Runtime) chan kerneltools.ExecResult {
	ch := make(chan kerneltools.ExecResult, 1)
	go func() {
		var res kerneltools.ExecResult
		out, err := rt.Call(ctx, "exec_tool", json.RawMessage(`{"path": "tools/double.ts", "args": {"n": 21}}`))
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		if err != nil {
			res.Error = &executor.Error{Kind: "call_failed", Message: err.Error()}
		}
		ch <- res
	}()
	return ch
}

// waitPending waits for a run waiting on a pending request.
func waitPending(rt *host.Runtime) approval.Request {
	for {
		rs, _ := rt.Approvals(approval.StatePending)
		for _, r := range rs {
			if r.Waiting > 0 {
				return r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func firstClause(s string) string {
	s, _, _ = strings.Cut(s, ";")
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
