package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
)

// The scripted model's answers for the demo: a fibonacci tool whose first
// version fails its own tests, and a SQL report tool.
const (
	demoFibGood = `/** Returns the n-th Fibonacci number. @tag math */
export default function fibonacci(args: { n: number }): number {
  if (!Number.isInteger(args.n) || args.n < 0) {
    throw new Error("n must be a non-negative integer");
  }
  let a = 0;
  let b = 1;
  for (let i = 0; i < args.n; i++) {
    const next = a + b;
    a = b;
    b = next;
  }
  return a;
}
`
	demoFibTests = `const fibonacci = require('./fibonacci').default;
export default async function (): Promise<void> {
  const cases: Array<[number, number]> = [[0, 0], [1, 1], [2, 1], [10, 55], [30, 832040]];
  for (const [n, want] of cases) {
    const got = fibonacci({ n });
    if (got !== want) {
      throw new Error("fibonacci(" + n + ") = " + got + ", want " + want);
    }
  }
}
`
	demoReport = `/** Lists the users who downgraded from pro to free in a month, pipe-delimited: name|from|to|date. @tag report, sql */
export default async function downgrades(args: { month: string }): Promise<string> {
  if (!/^[0-9]{4}-[0-9]{2}$/.test(args.month)) {
    throw new Error("month must look like 2026-06");
  }
  const r = await tgp.exec_sql(
    "SELECT name, old_plan, new_plan, changed FROM users WHERE changed LIKE ? AND old_plan = 'pro' AND new_plan = 'free' ORDER BY name",
    [args.month + "-%"],
  );
  return r.rows.map((u: { name: string; old_plan: string; new_plan: string; changed: string }) =>
    [u.name, u.old_plan, u.new_plan, u.changed].join("|")).join("\n");
}
`
	demoReportTests = `const downgrades = require('./downgrades').default;
export default async function (): Promise<void> {
  const got = await downgrades({ month: "2026-06" });
  const want = "ada|pro|free|2026-06-03\ncyd|pro|free|2026-06-21";
  if (got !== want) {
    throw new Error("June: got " + JSON.stringify(got) + ", want " + JSON.stringify(want));
  }
  let threw = false;
  try { await downgrades({ month: "June" }); } catch (e) { threw = true; }
  if (!threw) {
    throw new Error("a bad month must throw");
  }
}
`
)

// demoSubmit is the scripted model calling submit_tool.
func demoSubmit(path, code, tests string) llmtest.Step {
	args, _ := json.Marshal(map[string]string{"path": path, "code": code, "tests": tests})
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call", Name: "submit_tool", Arguments: string(args)}}}
}

// demoForge shows the closed loop with the scripted model (or the model in
// the environment): a forge that passes on its second attempt, a SQL
// report tool, and a reuse. It returns how many steps surprised.
func demoForge(ctx context.Context, dir string, cfg host.Config, stdout io.Writer) int {
	scripted := os.Getenv("AGENTOS_LLM_MODEL") == ""
	var srv *llmtest.Server
	if scripted {
		srv = llmtest.NewServer([]llmtest.Step{
			demoSubmit("tools/math/fibonacci.ts", strings.Replace(demoFibGood, "return a;", "return b;", 1), demoFibTests),
			demoSubmit("tools/math/fibonacci.ts", demoFibGood, demoFibTests),
			demoSubmit("tools/reports/downgrades.ts", demoReport, demoReportTests),
		})
		defer srv.Close()
		cfg.LLM = host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}
		fmt.Fprintf(stdout, "\nthe forge, with a scripted model served over HTTP at %s (set AGENTOS_LLM_BASE_URL and AGENTOS_LLM_MODEL to use a real one)\n", srv.URL())
	} else {
		fmt.Fprintf(stdout, "\nthe forge, with the model %s\n", os.Getenv("AGENTOS_LLM_MODEL"))
	}
	cfg.Root, cfg.Logger = dir, slog.New(slog.DiscardHandler)
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stdout, "   cannot start the runtime: %v\n", err)
		return 1
	}
	defer rt.Close()
	if err := seedDemoUsers(ctx, rt); err != nil {
		fmt.Fprintf(stdout, "   seeding the users table: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "   the database: a users table with 4 plan changes (SQLite, %s)\n", cfg.SQLitePath(dir))

	d := &forgeDemo{ctx: ctx, rt: rt, stdout: stdout, scripted: scripted, demoSurprises: demoSurprises{w: stdout}}
	res, err := d.forge("a tool that returns the n-th Fibonacci number")
	d.expect(err == nil && len(res.Attempts) == 2 && !res.Attempts[0].Passed && res.Attempts[1].Passed, "fibonacci should pass on its second attempt")
	res, err = d.forge("a report of the users who downgraded in a given month, pipe-delimited")
	if err == nil {
		d.execReport(res.Path)
	} else {
		d.expect(false, "the report tool should be forged")
	}
	res, err = d.forge("fibonacci number")
	d.expect(err == nil && res.Reused, "a similar spec should reuse the fibonacci tool")
	if scripted {
		d.expect(srv.Requests() == 3, fmt.Sprintf("the scripted model should have been asked 3 times, not %d", srv.Requests()))
		fmt.Fprintf(stdout, "   the model was asked %d times in all\n", srv.Requests())
	}
	return d.n
}

// seedDemoUsers fills the users table the report tool reads: 4 plan
// changes, 2 of them downgrades in June 2026.
func seedDemoUsers(ctx context.Context, rt *host.Runtime) error {
	for _, stmt := range []string{
		`{"sql":"CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, old_plan TEXT, new_plan TEXT, changed TEXT)"}`,
		`{"sql":"DELETE FROM users"}`,
		`{"sql":"INSERT INTO users (name, old_plan, new_plan, changed) VALUES ('ada','pro','free','2026-06-03'), ('bob','free','pro','2026-06-10'), ('cyd','pro','free','2026-06-21'), ('dee','pro','free','2026-07-02')"}`,
	} {
		if _, err := rt.Call(ctx, "exec_sql", json.RawMessage(stmt)); err != nil {
			return err
		}
	}
	return nil
}

// forgeDemo is the forge part of the demo: the runtime it calls, and the
// steps that surprised. IMPORTANT: only the scripted model's steps are
// checked; a real model may take other paths.
type forgeDemo struct {
	ctx      context.Context
	rt       *host.Runtime
	stdout   io.Writer
	scripted bool
	demoSurprises
}

// expect counts and says a surprise when ok is false (scripted model only).
func (d *forgeDemo) expect(ok bool, what string) {
	if d.scripted {
		d.demoSurprises.expect(ok, what)
	}
}

// forge calls forge_tool with spec and prints each attempt, or the reuse.
func (d *forgeDemo) forge(spec string) (forge.Result, error) {
	fmt.Fprintf(d.stdout, "   forge_tool %q\n", spec)
	args, _ := json.Marshal(map[string]string{"spec": spec})
	out, err := d.rt.Call(d.ctx, "forge_tool", args)
	var res forge.Result
	_ = json.Unmarshal(out, &res)
	if err != nil {
		fmt.Fprintf(d.stdout, "      failed: %v\n", err)
		return res, err
	}
	if res.Reused {
		fmt.Fprintf(d.stdout, "      reused %s (score %.2f), no model call\n", res.Path, res.Score)
		return res, nil
	}
	for _, a := range res.Attempts {
		if a.Passed {
			fmt.Fprintf(d.stdout, "      attempt %d: check and tests passed\n", a.N)
		} else {
			fmt.Fprintf(d.stdout, "      attempt %d: %s\n", a.N, firstLine(strings.Join(a.Errors, "; ")))
		}
	}
	fmt.Fprintf(d.stdout, "      registered %s, tests in %s, commit %.12s\n", res.Path, res.Tests, res.Commit)
	return res, nil
}

// execReport runs the forged report tool at path for June 2026 and prints
// its lines.
func (d *forgeDemo) execReport(path string) {
	out, xerr := d.rt.Call(d.ctx, "exec_tool", json.RawMessage(`{"path":"`+path+`","args":{"month":"2026-06"}}`))
	var run struct {
		Result json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(out, &run)
	var report string
	_ = json.Unmarshal(run.Result, &report)
	fmt.Fprintf(d.stdout, "      exec_tool %s {month: 2026-06} ->\n", path)
	for _, l := range strings.Split(report, "\n") {
		fmt.Fprintf(d.stdout, "        %s\n", l)
	}
	d.expect(xerr == nil && report == "ada|pro|free|2026-06-03\ncyd|pro|free|2026-06-21", "the June report")
}
