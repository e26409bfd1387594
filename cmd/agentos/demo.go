package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/units"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
)

// demoTool is one step of the demo: a tool, how it is run, and what must
// come out. The demo fails (exit 1) if any step does not behave as expected.
type demoTool struct {
	path, title, src, args string
	valid                  bool   // check_tool's verdict
	note                   string // what the verdict means, when a reader could misread it
	want                   string // the JSON result, or the error kind when it starts with "!"
	limits                 executor.Limits
}

var demoTools = []demoTool{
	{path: samples.FibPath, title: "a pure function", valid: true, args: `{"n": 10}`, want: "55", src: samples.FibTool},
	{path: "tools/lib/stats.ts", title: "a library other tools require", valid: true, src: `/** Sums and averages of a list of numbers. */
export function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

export function mean(xs: number[]): number {
  return xs.length === 0 ? 0 : sum(xs) / xs.length;
}
`},
	{path: "tools/reports/orders.ts", title: "composition + the tgp bridge", valid: true, args: `{"file": "data/orders.json", "by": "region"}`,
		want: `{"groups":{"north":{"count":2,"total":150,"mean":75},"south":{"count":1,"total":40,"mean":40}},"report":"/tmp/report.txt"}`, src: `/**
 * Groups orders from a JSON file by a field and totals their amounts.
 * @tag reports
 */
import { sum, mean } from '../lib/stats';

type Order = { amount: number } & Record<string, unknown>;

export default async function (args: { file: string; by: string }) {
  const orders: Order[] = JSON.parse(await tgp.read_file(args.file));
  const keys = [...new Set(orders.map((o) => String(o[args.by])))];
  const groups = Object.fromEntries(keys.map((k) => {
    const amounts = orders.filter((o) => String(o[args.by]) === k).map((o) => o.amount);
    return [k, { count: amounts.length, total: sum(amounts), mean: mean(amounts) }];
  }));
  const lines = keys.map((k) => k + '|' + groups[k].total);
  await tgp.write_file('/tmp/report.txt', lines.join('\n'));
  tgp.log('wrote', lines.length, 'lines to /tmp/report.txt');
  return { groups, report: '/tmp/report.txt' };
}
`},
	{path: "tools/bad/magic.ts", title: "breaks the standards", valid: false, args: `{}`, want: "0.15", src: `export default function (args: any) {
  const discount = 0.15;
  return args.price > 42 ? 'ops@example.com' : discount;
}
`},
	{path: "tools/bad/escape.ts", title: "tries to leave the jail", valid: true, args: `{}`, want: "!exception",
		note: "valid means it breaks no coding standard; the attempt shows as its risk, high, and the jail refuses the read when it runs", src: `/** Reads a file outside the tool root. */
export default async function () {
  return tgp.read_file('../../etc/passwd');
}
`},
	{path: "tools/bad/freeze.ts", title: "never returns", valid: true, args: `{}`, want: "!timeout", limits: executor.Limits{Timeout: 300 * time.Millisecond}, src: `/** Spins forever. */
export default function () {
  for (;;) {
    // nothing
  }
}
`},
	{path: "tools/bad/bomb.ts", title: "asks for a string of 2 ** 36 characters (64 GiB; the exponent comes in its arguments)", valid: true, args: `{"exp": 36}`, want: "!memory_limit",
		note: "valid: how much memory a tool will ask for is not in its code, so no check can see it; the memory limit stops it", src: `/** Builds a string of 2 ** exp characters. */
export default function (args: { exp: number }): number {
  return 'x'.repeat(2 ** args.exp).length;
}
`},
	{path: "tools/bad/ctor.ts", title: "smuggles eval through a constructor", valid: false, args: `{}`, want: "!exception", src: `/** Builds code from a string. */
export default function () {
  const F = (() => null).constructor;
  return F('return globalThis')();
}
`},
}

// runDemo runs the demo: agentos demo [--dir DIR] [--keep] [--cluster
// [--json]]. It exits 1 (errFailed) when a step does not behave as
// expected.
func runDemo(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, err := parseDemoFlags(args)
	if err != nil {
		return err
	}
	if f.clustered {
		dir, cleanup, err := f.workDir("agentos-cluster-demo-", func(dir string) error { return os.MkdirAll(dir, 0o700) })
		if err != nil {
			return err
		}
		defer cleanup()
		return runDemoCluster(ctx, dir, f.asJSON, stdout)
	}
	dir, cleanup, err := f.workDir("agentos-demo-", func(dir string) error { return demoDir(dir, stdout) })
	if err != nil {
		return err
	}
	defer cleanup()
	cfg, err := initDemoRoot(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agentos demo in %s\n", dir)
	// First the forge: agents get tools by reuse or by forging them.
	surprises := demoForge(ctx, dir, cfg, stdout)
	surprises += demoCrash(ctx, dir, cfg, stdout)
	sb, err := openSandboxDemo(dir, cfg, stdout)
	if err != nil {
		return err
	}
	defer sb.close()
	n, err := sb.run(ctx)
	if err != nil {
		return err
	}
	surprises += n
	// The same tools, now through the kernel: an agent process with narrow
	// rights and a budget. The runtime takes over the journal.
	sb.ex.Close()
	sb.j.Close()
	surprises += demoKernel(ctx, dir, cfg, stdout)
	return demoVerdict(surprises, stdout)
}

// demoFlags are the flags of 'agentos demo'.
type demoFlags struct {
	dir                     string
	keep, clustered, asJSON bool
}

// parseDemoFlags parses demo's command line: no positional argument, and
// --json only with --cluster.
func parseDemoFlags(args []string) (demoFlags, error) {
	var f demoFlags
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&f.dir, "dir", "", "the tool root to create (default: a fresh temporary directory, removed at the end)")
	fs.BoolVar(&f.keep, "keep", false, "keep the temporary tool root")
	fs.BoolVar(&f.clustered, "cluster", false, "the cluster demo: three node processes on loopback sharing a Git upstream and a PostgreSQL journal (needs PostgreSQL installed); a forge on one node, reuse on another, a node SIGKILLed in the middle of a forge that another node finishes")
	fs.BoolVar(&f.asJSON, "json", false, "with --cluster: print one JSON object {nodes, forged, reused, killed, resumed_on, model_requests, model_requests_uninterrupted, lost_tools, tools}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) != 0 {
		return f, usagef("demo takes no arguments")
	}
	if f.asJSON && !f.clustered {
		return f, usagef("demo --json goes with --cluster")
	}
	return f, nil
}

// workDir is the demo's directory: --dir, readied by prepare, or a fresh
// temporary directory named after prefix. The caller MUST call cleanup when
// the demo ends: it removes the temporary directory unless --keep.
func (f demoFlags) workDir(prefix string, prepare func(dir string) error) (dir string, cleanup func(), err error) {
	if f.dir != "" {
		return f.dir, func() {}, prepare(f.dir)
	}
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", nil, err
	}
	if f.keep {
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// initDemoRoot makes dir a tool root whose Git upstream lives in its state
// directory (so the demo leaves nothing beside its tool root) and loads its
// configuration.
func initDemoRoot(dir string) (host.Config, error) {
	upstream := filepath.Join(host.StateDir, "upstream.git")
	if err := os.MkdirAll(filepath.Join(dir, host.StateDir), 0o700); err != nil {
		return host.Config{}, err
	}
	if _, err := os.Stat(filepath.Join(dir, upstream)); errors.Is(err, os.ErrNotExist) {
		if err := repo.InitBare(filepath.Join(dir, upstream), "main"); err != nil {
			return host.Config{}, err
		}
	}
	if _, err := host.Init(dir, host.InitOptions{Upstream: upstream}); err != nil {
		return host.Config{}, err
	}
	return host.LoadConfig(dir)
}

// demoVerdict counts the per-run /tmp directories left behind and says
// whether every step behaved as expected (errFailed when not).
func demoVerdict(surprises int, stdout io.Writer) error {
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentos-run-*"))
	fmt.Fprintf(stdout, "per-run /tmp directories left behind: %d\n", len(left))
	if surprises > 0 {
		fmt.Fprintf(stdout, "\n%d step(s) did not behave as expected\n", surprises)
		return errFailed
	}
	fmt.Fprintf(stdout, "\nevery step behaved as expected\n")
	return nil
}

// sandboxDemo is the demo's sandbox part: demoTools written through the
// jail, checked, and run in sandbox workers with every run journaled.
type sandboxDemo struct {
	stdout    io.Writer
	jail      *vfs.Jail
	ex        *executor.Executor
	stop      func()
	j         *journal.Journal
	checker   *check.Checker
	runIDs    map[string]string // tool path -> its run
	surprises int
}

// openSandboxDemo writes the report's data and opens the executor and the
// journal. The caller MUST call close.
func openSandboxDemo(dir string, cfg host.Config, stdout io.Writer) (s *sandboxDemo, err error) {
	s = &sandboxDemo{stdout: stdout, runIDs: map[string]string{}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.jail, err = vfs.Open(dir); err != nil {
		return nil, err
	}
	if err := s.jail.WriteFile("data/orders.json", []byte(`[{"region":"north","amount":100},{"region":"south","amount":40},{"region":"north","amount":50}]`)); err != nil {
		return nil, err
	}
	if s.ex, s.stop, err = toolExecutor(dir, cfg, nil); err != nil {
		return nil, err
	}
	if s.j, err = openJournal(dir, cfg, "", false); err != nil {
		return nil, err
	}
	s.checker = check.New(cfg.CheckOptions())
	return s, nil
}

// close closes the journal, the executor and the jail, in that order.
func (s *sandboxDemo) close() {
	if s.j != nil {
		s.j.Close()
	}
	if s.stop != nil {
		s.stop()
	}
	if s.jail != nil {
		s.jail.Close()
	}
}

// run checks and runs every demo tool, shows the host still serves, and
// replays the report offline. It returns how many steps surprised.
func (s *sandboxDemo) run(ctx context.Context) (int, error) {
	fmt.Fprintf(s.stdout, "\nthe sandbox: tools are written, checked on a syntax tree, and run in sandbox worker processes\n")
	fmt.Fprintf(s.stdout, "(a bridge call is one I/O of the tool through tgp, the clock or Math.random; each is journaled)\n\n")
	for i, t := range demoTools {
		if err := s.tool(ctx, i, t); err != nil {
			return 0, err
		}
	}
	// The host survived every bad tool: one more good run proves it.
	r := s.ex.Exec(ctx, executor.Request{Path: samples.FibPath, Args: json.RawMessage(`{"n": 30}`)})
	fmt.Fprintf(s.stdout, "after all that, the runtime still serves: fib(30) = %s\n", r.Result)
	if string(r.Result) != "832040" {
		s.surprises++
	}
	if err := s.replay(ctx); err != nil {
		return 0, err
	}
	return s.surprises, nil
}

// tool writes, checks and (when it has arguments) runs the i-th demo tool.
func (s *sandboxDemo) tool(ctx context.Context, i int, t demoTool) error {
	fmt.Fprintf(s.stdout, "%d. %s — %s\n", i+1, t.path, t.title)
	if err := s.jail.WriteFile(t.path, []byte(t.src)); err != nil {
		return err
	}
	res := s.check(t)
	if t.args == "" {
		fmt.Fprintln(s.stdout)
		return nil
	}
	if !res.Valid {
		fmt.Fprintf(s.stdout, "   exec   (run anyway, to show the sandbox holds)\n")
	}
	if err := s.exec(ctx, t); err != nil {
		return err
	}
	fmt.Fprintln(s.stdout)
	return nil
}

// check prints the checker's verdict on t: its errors (the first three),
// the risks that set its level, its note, and whether it surprised.
func (s *sandboxDemo) check(t demoTool) check.Result {
	res := s.checker.Check(t.path, []byte(t.src))
	verdict := "valid"
	if !res.Valid {
		verdict = "invalid, " + units.Plural(len(res.Errors), "error", "errors")
	}
	fmt.Fprintf(s.stdout, "   check  %s, risk %s\n", verdict, res.Risk)
	for j, f := range res.Errors {
		if j == 3 {
			fmt.Fprintf(s.stdout, "          ... and %s\n", units.Plural(len(res.Errors)-3, "more error", "more errors"))
			break
		}
		fmt.Fprintf(s.stdout, "          %s\n", f)
	}
	for _, r := range res.Risks {
		if r.Level != res.Risk {
			continue // the risks that set the level
		}
		fmt.Fprintf(s.stdout, "          %d:%d risk %s: %s\n", r.Line, r.Column, r.Level, r.Reason)
	}
	if t.note != "" {
		fmt.Fprintf(s.stdout, "          (%s)\n", t.note)
	}
	if res.Valid != t.valid {
		s.surprises++
		fmt.Fprintf(s.stdout, "   UNEXPECTED: check said valid=%v\n", res.Valid)
	}
	return res
}

// exec runs t, journaled, and prints its result or why it stopped, its
// logs, its bridge calls and whether it surprised.
func (s *sandboxDemo) exec(ctx context.Context, t demoTool) error {
	r, runID, err := executor.Record(ctx, s.ex, s.j, executor.Request{Path: t.path, Args: json.RawMessage(t.args), Limits: t.limits})
	if err != nil {
		return err
	}
	s.runIDs[t.path] = runID
	got := string(r.Result)
	if !r.Success {
		got = "!" + string(r.Error.Kind)
		fmt.Fprintf(s.stdout, "   exec   %s -> stopped: %s: %s\n", t.args, r.Error.Kind, firstLine(r.Error.Message))
	} else {
		fmt.Fprintf(s.stdout, "   exec   %s -> %s\n", t.args, got)
	}
	for _, l := range r.Logs {
		fmt.Fprintf(s.stdout, "          log: %s\n", l)
	}
	fmt.Fprintf(s.stdout, "          %s, %v\n", units.Plural(r.Calls, "bridge call", "bridge calls"), r.Duration.Round(10*time.Microsecond))
	if got != t.want {
		s.surprises++
		fmt.Fprintf(s.stdout, "   UNEXPECTED: wanted %s\n", t.want)
	}
	return nil
}

// replay empties the report's data, then replays the report's run from the
// journal, offline: every run was journaled, so the result is the same.
func (s *sandboxDemo) replay(ctx context.Context) error {
	if err := s.jail.WriteFile("data/orders.json", []byte(`[]`)); err != nil {
		return err
	}
	rep, err := executor.Replay(ctx, s.ex, s.j, s.runIDs["tools/reports/orders.ts"], nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "replayed run %s from the journal, offline, after data/orders.json was emptied: same result = %v\n", rep.Run.ID, rep.Same)
	if !rep.Same || rep.Divergence != nil {
		s.surprises++
	}
	return nil
}

// demoMarker, in a tool root's state directory, says the demo made it.
const demoMarker = "demo-root"

// demoDir prepares --dir: the demo needs a fresh tool root (its steps
// expect an empty registry and journal). A missing or empty directory is
// used; one a previous demo made (it holds the demo's marker) is emptied
// and used again; any other non-empty directory is refused, untouched.
func demoDir(dir string, stdout io.Writer) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating the demo's directory: %w", err)
		}
	case err != nil:
		return usagef("--dir %s: %v", dir, err)
	case len(entries) > 0:
		if fi, err := os.Lstat(filepath.Join(dir, host.StateDir, demoMarker)); err != nil || !fi.Mode().IsRegular() {
			return usagef("--dir %s is not empty and was not made by 'agentos demo': the demo builds a fresh tool root, so pass a new or empty directory (nothing in %s was changed)", dir, dir)
		}
		fmt.Fprintf(stdout, "%s holds an earlier demo's tool root: removing it to start again\n", dir)
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("removing the earlier demo: %w", err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, host.StateDir), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, host.StateDir, demoMarker), []byte("made by 'agentos demo': a new demo with --dir here removes everything in this tool root\n"), 0o600)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// demoSurprises counts the demo's steps that did not go as expected, and
// says each on w.
type demoSurprises struct {
	w io.Writer
	n int
}

// expect counts and says a surprise when ok is false.
func (s *demoSurprises) expect(ok bool, what string) {
	if !ok {
		s.n++
		fmt.Fprintf(s.w, "   UNEXPECTED: %s\n", what)
	}
}

// demoKernel runs an agent process through the kernel: its capability
// refuses a read outside its scope, its quota ends it, and ps and events
// show what happened. It returns how many steps surprised.
func demoKernel(ctx context.Context, dir string, cfg host.Config, stdout io.Writer) int {
	s := &demoSurprises{w: stdout}
	cfg.Root, cfg.Logger = dir, slog.New(slog.DiscardHandler)
	rt, err := host.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stdout, "\nkernel: cannot start the runtime: %v\n", err)
		return 1
	}
	defer rt.Close()
	k := rt.Kernel()
	fmt.Fprintf(stdout, "\nthe kernel: an agent process that may read and exec tools/math/ only, with a budget of 3 tool calls\n")
	lines := make(chan string, 8)
	agent, err := k.Spawn(demoAnalyst(rt, lines), kernel.SpawnOptions{
		Name:   "analyst",
		Image:  "demo-agent",
		Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/math/"}, {Right: capability.Exec, Scope: "tools/math/"}},
		Quota:  capability.Limits{capability.ToolCalls: 3},
	})
	if err != nil {
		fmt.Fprintf(stdout, "   cannot spawn: %v\n", err)
		return 1
	}
	for l := range lines {
		fmt.Fprintln(stdout, l)
	}
	reason, _ := agent.Wait(ctx)
	fmt.Fprintf(stdout, "   the process ended: %s (its siblings would have kept running)\n", reason)
	s.expect(reason.String() == "quota:tool_calls", "the agent should end with quota:tool_calls")
	demoKernelTables(k, s)
	demoWriteAndSearch(ctx, rt, s)
	return s.n
}

// demoAnalyst is the demo's agent process: it calls tools inside and
// outside its grants until its quota of tool calls ends it, sending a line
// per call on lines (closed when it ends).
func demoAnalyst(rt *host.Runtime, lines chan<- string) func(ctx context.Context, p *kernel.Process) error {
	return func(ctx context.Context, p *kernel.Process) error {
		defer close(lines)
		calls := []struct{ tool, args string }{
			{"exec_tool", `{"path":"tools/math/fib.ts","args":{"n":20}}`},
			{"read_file", `{"path":"tools/reports/orders.ts"}`},
			{"exec_tool", `{"path":"tools/math/fib.ts","args":{"n":21}}`},
			{"exec_tool", `{"path":"tools/math/fib.ts","args":{"n":22}}`},
			{"exec_tool", `{"path":"tools/math/fib.ts","args":{"n":23}}`},
		}
		for _, c := range calls {
			out, err := rt.Node().Call(ctx, p, c.tool, json.RawMessage(c.args))
			if err != nil {
				lines <- fmt.Sprintf("   %s %s -> %s", c.tool, c.args, firstLine(err.Error()))
				var qe *capability.QuotaError
				if errors.As(err, &qe) {
					return err
				}
				continue
			}
			var res struct {
				Result json.RawMessage `json:"result"`
			}
			_ = json.Unmarshal(out, &res)
			lines <- fmt.Sprintf("   %s %s -> %s", c.tool, c.args, res.Result)
		}
		return nil
	}
}

// demoKernelTables prints the kernel's events by kind and its process
// table.
func demoKernelTables(k *kernel.Kernel, s *demoSurprises) {
	counts := map[kernel.EventKind]int{}
	for _, e := range k.Events(0, 0) {
		counts[e.Kind]++
	}
	fmt.Fprintf(s.w, "   kernel events: %s, %s, %s, %s\n", units.Plural(counts[kernel.EventSpawn], "spawn", "spawns"), units.Plural(counts[kernel.EventRefused], "refusal", "refusals"), units.Plural(counts[kernel.EventCharge], "quota charge", "quota charges"), units.Plural(counts[kernel.EventExit], "exit", "exits"))
	s.expect(counts[kernel.EventRefused] == 1, "one capability refusal")
	for _, p := range k.PS() {
		fmt.Fprintf(s.w, "   ps: pid %d %s (%s) %s, %s\n", p.PID, p.Name, p.Image, p.Status, units.Plural(p.Calls, "call", "calls"))
	}
}

// demoWriteAndSearch has the default process write a tool: it is
// registered, committed and pushed to the upstream, and search finds it.
func demoWriteAndSearch(ctx context.Context, rt *host.Runtime, s *demoSurprises) {
	stdout := s.w
	fmt.Fprintf(stdout, "\nthe default process writes a tool; the registry indexes it and Git shares it\n")
	slug := "/** Turns a title into a URL slug. @tag text */\nexport default function slug(args: { title: string }): string {\n  return args.title.toLowerCase().trim().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');\n}\n"
	wargs, _ := json.Marshal(map[string]string{"path": "tools/text/slug.ts", "content": slug})
	out, err := rt.Call(ctx, "write_file", wargs)
	var w struct {
		Commit string `json:"commit"`
	}
	_ = json.Unmarshal(out, &w)
	fmt.Fprintf(stdout, "   write_file tools/text/slug.ts -> commit %.12s pushed to %s\n", w.Commit, filepath.Join(host.StateDir, "upstream.git"))
	s.expect(err == nil && w.Commit != "", fmt.Sprintf("the write should be committed (%v)", err))
	out, err = rt.Call(ctx, "search_tools", json.RawMessage(`{"query":"make a url slug from a title","limit":1}`))
	var hits []struct {
		Path  string  `json:"path"`
		Score float64 `json:"score"`
	}
	_ = json.Unmarshal(out, &hits)
	if err == nil && len(hits) == 1 {
		fmt.Fprintf(stdout, "   search_tools \"make a url slug from a title\" -> %s (score %.2f)\n", hits[0].Path, hits[0].Score)
	}
	s.expect(err == nil && len(hits) == 1 && hits[0].Path == "tools/text/slug.ts", "search should find the slug tool")
}
