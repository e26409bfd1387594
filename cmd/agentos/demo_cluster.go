package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/journal"
)

// The cluster demo's second tool: a slug maker whose first version fails
// its tests. Its tests take a moment (a busy loop), the window in which the
// demo kills the node forging it: after the model's first answer is
// journaled, before the test outcome is.
const (
	demoSlugSpec  = "a tool that turns a title into a URL slug: lower case words joined by hyphens, punctuation dropped"
	demoSlugBuggy = `/** Turns a title into a URL slug: lower-case words joined by "-". @tag text */
export default function slugify(args: { title: string }): string {
  return args.title.toLowerCase().split(" ").join("-");
}
`
	demoSlowSlugTests = `const slugify = require('./slugify').default;
const ROUNDS = 6000000;
export default async function (): Promise<void> {
  let spin = 0;
  for (let i = 0; i < ROUNDS; i++) { spin = (spin + i) % ROUNDS; }
  const cases: Array<[string, string]> = [["Hello World", "hello-world"], ["  Agents, forge tools! ", "agents-forge-tools"]];
  for (const [title, want] of cases) {
    const got = slugify({ title });
    if (got !== want) {
      throw new Error("slugify(" + JSON.stringify(title) + ") = " + JSON.stringify(got) + ", want " + JSON.stringify(want) + " (" + spin + ")");
    }
  }
}
`
	demoFibSpec = "a tool that returns the n-th Fibonacci number"
)

// clusterDemo is what 'agentos demo --cluster --json' prints.
type clusterDemo struct {
	Nodes int `json:"nodes"`
	// Forged counts the tools forged; Reused the runs of a tool on a node
	// that did not forge it.
	Forged int `json:"forged"`
	Reused int `json:"reused"`
	// Killed is the node SIGKILLed in the middle of the second forge,
	// ResumedOn the node that finished that forge.
	Killed    string `json:"killed"`
	ResumedOn string `json:"resumed_on"`
	// ModelRequests is what the scripted model received; Uninterrupted what
	// the same forges ask without a crash. Equal: no journaled answer was
	// asked again.
	ModelRequests int `json:"model_requests"`
	Uninterrupted int `json:"model_requests_uninterrupted"`
	// ResumeMS is the time from the SIGKILL to the interrupted forge's
	// answer: the death seen, the dead node's claim lapsed (journal_lease
	// 3s here), the forge resumed and finished elsewhere.
	ResumeMS int64 `json:"resume_ms"`
	// LostTools counts forged tools some surviving node cannot run.
	LostTools int      `json:"lost_tools"`
	Tools     []string `json:"tools"`
}

// demoNode is one node process of the cluster demo.
type demoNode struct {
	name, root string
	cmd        *exec.Cmd
	pid        int
	dead       bool
}

// runDemoCluster starts three node processes on loopback sharing a Git
// upstream and a PostgreSQL journal, forges a tool on node 1, runs it on
// node 2, SIGKILLs the node forging a second tool in the middle of that
// forge and shows another node finishing it without asking the model again
// for what was journaled.
func runDemoCluster(ctx context.Context, dir string, asJSON bool, stdout io.Writer) (err error) {
	d := &clusterDemoRun{dir: dir, asJSON: asJSON, stdout: stdout}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pg, stopPG, err := startDemoPostgres()
	if err != nil {
		return err
	}
	defer stopPG()
	d.say("agentos cluster demo in %s\n  shared journal: PostgreSQL on loopback (throwaway)", dir)
	d.startModel()
	defer d.model.Close()
	stopNodes, err := d.startNodes(ctx, pg.DSN)
	defer stopNodes()
	if err != nil {
		return err
	}
	d.out = clusterDemo{Nodes: len(d.nodes), Uninterrupted: demoUninterrupted}
	fib, err := d.forgeAndReuse(ctx)
	if err != nil {
		return err
	}
	// 3. the second forge, killed in the middle.
	j, err := journal.OpenPostgres(pg.DSN, journal.Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	slug, err := d.forgeThroughKill(ctx, j)
	if err != nil {
		return err
	}
	d.checkTools(ctx, fib.Path, slug.Path)
	return d.finish()
}

// demoUninterrupted is how many model answers the cluster demo's forges
// take without a crash: one for the first forge, two for the second.
const demoUninterrupted = 3

// clusterDemoRun is one run of the cluster demo: its nodes, its scripted
// model and what it found.
type clusterDemoRun struct {
	dir    string
	asJSON bool
	stdout io.Writer
	model  *llmtest.Server
	asked  chan int // the model's answers, numbered from 1, as they are asked
	nodes  []*demoNode
	out    clusterDemo
}

// say prints a line of the demo's story, unless --json.
func (d *clusterDemoRun) say(format string, a ...any) {
	if !d.asJSON {
		fmt.Fprintf(d.stdout, format+"\n", a...)
	}
}

// startDemoPostgres starts the throwaway PostgreSQL server of the shared
// journal in its own directory (owned by the postgres user when the demo
// runs as root, so not below the demo's 0700 directory). The caller MUST
// call stop.
func startDemoPostgres() (pg *pgtest.Server, stop func(), err error) {
	pgDir, err := os.MkdirTemp("", "agentos-cluster-demo-pg-")
	if err != nil {
		return nil, nil, err
	}
	pg, err = pgtest.StartServer(pgDir)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		os.RemoveAll(pgDir)
		return nil, nil, fmt.Errorf("demo --cluster: the nodes share their journal in PostgreSQL, and %w (apt-get install postgresql), then run it again", err)
	}
	if err != nil {
		os.RemoveAll(pgDir)
		return nil, nil, fmt.Errorf("demo --cluster: starting PostgreSQL for the shared journal: %w", err)
	}
	return pg, func() { pg.Stop(); os.RemoveAll(pgDir) }, nil
}

// startModel starts the scripted model: the first forge's answer, then the
// second forge's buggy answer and its fix. Each answer is reported on
// d.asked as it is asked. The caller MUST close d.model.
func (d *clusterDemoRun) startModel() {
	steps := []llmtest.Step{
		demoSubmit("tools/math/fibonacci.ts", demoFibGood, demoFibTests),
		demoSubmit("tools/text/slugify.ts", demoSlugBuggy, demoSlowSlugTests),
		demoSubmit("tools/text/slugify.ts", demoSlug, demoSlowSlugTests),
	}
	d.asked = make(chan int, len(steps))
	for i := range steps {
		steps[i].Check = func(llmtest.Received) error { d.asked <- i + 1; return nil }
	}
	d.model = llmtest.NewServer(steps)
}

// demoClusterEnv is what the demo's three nodes share: a Git upstream, a
// capability key, their health ports (the seed list), their environment
// and the CA of their mutual TLS.
type demoClusterEnv struct {
	bare, certs string
	health      []int
	seeds, env  []string
}

// newDemoClusterEnv makes the upstream, the key, the ports and the CA. The
// nodes talk over mutual TLS, as a deployment does: a CA and one member
// certificate per node (what 'agentos cluster certs' makes).
func newDemoClusterEnv(dir, dsn string) (e demoClusterEnv, err error) {
	e.bare = filepath.Join(dir, "tools.git")
	if err := repo.InitBare(e.bare, "main"); err != nil {
		return e, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if e.health, err = loopport.Reserve(3); err != nil {
		return e, err
	}
	e.seeds = make([]string, len(e.health))
	for i, p := range e.health {
		e.seeds[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	e.env = append(os.Environ(), "AGENTOS_DEMO_CAPABILITY_KEY="+hex.EncodeToString(key), "AGENTOS_DEMO_JOURNAL="+dsn)
	e.certs = filepath.Join(dir, "certs")
	if _, err := cluster.MakeCA(e.certs, "demo", 24*time.Hour); err != nil {
		return e, err
	}
	return e, nil
}

// startNodes starts the three node processes and waits until each sees
// the cluster's three members. stop, never nil, MUST be called even on an
// error: it closes the nodes' logs and stops (SIGTERM, then SIGKILL after
// 20 s) the nodes started.
func (d *clusterDemoRun) startNodes(ctx context.Context, dsn string) (stop func(), err error) {
	d.nodes = make([]*demoNode, 3)
	var logs []*os.File
	stop = func() {
		for i := len(logs) - 1; i >= 0; i-- {
			logs[i].Close()
		}
		stopDemoNodes(d.nodes)
	}
	e, err := newDemoClusterEnv(d.dir, dsn)
	if err != nil {
		return stop, err
	}
	for i := range d.nodes {
		n, log, err := d.startNode(i, e)
		if log != nil {
			logs = append(logs, log)
		}
		if err != nil {
			return stop, err
		}
		d.nodes[i] = n
	}
	for _, n := range d.nodes {
		if err := demoWaitMembers(ctx, n, len(d.nodes)); err != nil {
			return stop, fmt.Errorf("demo --cluster: %s did not join (its log: %s): %w", n.name, filepath.Join(d.dir, n.name+".log"), err)
		}
	}
	d.say("  %d node processes joined the cluster \"demo\" (seed list on loopback, mutual TLS with certificates from the demo's CA): pids %d, %d, %d", len(d.nodes), d.nodes[0].pid, d.nodes[1].pid, d.nodes[2].pid)
	return stop, nil
}

// stopDemoNodes stops the nodes still alive: SIGTERM, then SIGKILL after
// 20 s.
func stopDemoNodes(nodes []*demoNode) {
	for _, n := range nodes {
		if n != nil && !n.dead {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = n.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = n.cmd.Process.Kill()
			}
		}
	}
}

// startNode makes node i's tool root and configuration and starts its
// process, 'agentos serve', logging to <dir>/node<i+1>.log. The caller MUST
// close the log, returned once created, even with an error.
func (d *clusterDemoRun) startNode(i int, e demoClusterEnv) (*demoNode, *os.File, error) {
	n := &demoNode{name: fmt.Sprintf("node%d", i+1), root: filepath.Join(d.dir, fmt.Sprintf("node%d", i+1))}
	if _, err := host.Init(n.root, host.InitOptions{Upstream: e.bare}); err != nil {
		return nil, nil, err
	}
	cert, key, err := cluster.MakeMemberCert(e.certs, n.name, []string{"127.0.0.1"}, 24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	if err := demoClusterConfig(n.root, map[string]any{
		"llm": map[string]any{"base_url": d.model.URL(), "model": "scripted", "forge_attempts": 3},
		// The slugify tests spin on purpose (the kill lands while they
		// run): on a loaded machine they must not hit the 5 s default,
		// or the good answer fails as a timeout and the forge asks the
		// model a fourth time, which the script does not have.
		"limits":                   map[string]any{"timeout": "60s"},
		"capability":               map[string]any{"signing_key_env": "AGENTOS_DEMO_CAPABILITY_KEY"},
		"journal_postgres_dsn_env": "AGENTOS_DEMO_JOURNAL",
		"journal_lease":            "3s",
		"cluster": map[string]any{"enabled": true, "name": "demo", "seeds": e.seeds, "health_port": e.health[i],
			"cert": cert, "key": key, "ca": filepath.Join(e.certs, cluster.CACertFile)},
	}); err != nil {
		return nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	log, err := os.Create(filepath.Join(d.dir, n.name+".log"))
	if err != nil {
		return nil, nil, err
	}
	n.cmd = exec.Command(self, "serve", "--root", n.root)
	n.cmd.Env, n.cmd.Stdout, n.cmd.Stderr = e.env, log, log
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		return nil, log, err
	}
	n.pid = n.cmd.Process.Pid
	return n, log, nil
}

// forgeAndReuse is the demo's steps 1 and 2: node 1 forges a tool, node 2
// runs it at once (the commit reached it through the cluster).
func (d *clusterDemoRun) forgeAndReuse(ctx context.Context) (forge.Result, error) {
	fib, err := demoForgeOn(ctx, d.nodes[0], demoFibSpec)
	if err != nil {
		return fib, err
	}
	d.out.Forged++
	d.out.Tools = append(d.out.Tools, fib.Path)
	d.say("\n1. node1 forged %s (commit %.8s) with %d model request(s)", fib.Path, fib.Commit, d.model.Requests())
	if got, err := demoExec(ctx, d.nodes[1], fib.Path, `{"n": 10}`); err != nil || got != "55" {
		return fib, fmt.Errorf("demo --cluster: node2 running %s: %s %v", fib.Path, got, err)
	}
	d.out.Reused++
	d.say("2. node2 ran it at once: fibonacci(10) = 55 (it pulled the commit announced over the cluster)")
	return fib, nil
}

// demoAnswer is a forge_tool call's answer.
type demoAnswer struct {
	res forge.Result
	err error
}

// forgeThroughKill is the demo's step 3: node 2 asks for a second tool,
// the node the cluster places its forge on is SIGKILLed once the model's
// first answer is journaled, and the forge completes on another node.
func (d *clusterDemoRun) forgeThroughKill(ctx context.Context, j *journal.Journal) (forge.Result, error) {
	caller := d.nodes[1]
	answers := make(chan demoAnswer, 1)
	go func() { r, err := demoForgeOn(ctx, caller, demoSlugSpec); answers <- demoAnswer{r, err} }()
	victim, err := demoFindForging(ctx, j, d.nodes, d.asked)
	if err != nil {
		return forge.Result{}, err
	}
	killed := time.Now()
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		return forge.Result{}, err
	}
	_, _ = victim.cmd.Process.Wait()
	victim.dead = true
	d.out.Killed = victim.name
	d.say("3. node2 asked for a second tool; the cluster placed its forge on %s, which got the model's first answer\n   (journaled) and was SIGKILLed while it tested that answer", victim.name)
	got := d.failOver(ctx, victim, caller, answers)
	if got.err != nil {
		return forge.Result{}, fmt.Errorf("demo --cluster: the interrupted forge did not complete: %w", got.err)
	}
	d.out.ResumeMS = time.Since(killed).Milliseconds()
	d.out.Forged++
	d.out.Tools = append(d.out.Tools, got.res.Path)
	meta, err := j.Get(got.res.RunID)
	if err != nil {
		return forge.Result{}, err
	}
	d.out.ResumedOn = demoNodeOf(meta.Owner, meta.Host.PID, d.nodes)
	if d.out.ResumedOn == "" {
		d.out.ResumedOn = d.resumedOn(ctx)
	}
	d.out.ModelRequests = d.model.Requests()
	d.say("   %s resumed the forge from the shared journal and finished it %.1f s after the kill: %d attempts, the model asked %d time(s) in all (%d without the crash)",
		d.out.ResumedOn, float64(d.out.ResumeMS)/1000, len(got.res.Attempts), d.out.ModelRequests, demoUninterrupted)
	return got.res, nil
}

// failOver waits for the interrupted forge's answer. When the caller died
// with the forge, another node alive asks for the same tool again; else the
// caller's request fails over by itself.
func (d *clusterDemoRun) failOver(ctx context.Context, victim, caller *demoNode, answers <-chan demoAnswer) demoAnswer {
	if victim != caller {
		d.say("   node2's request fails over by itself: its grain is activated again on a node alive")
		return <-answers
	}
	<-answers
	for _, n := range d.nodes {
		if !n.dead {
			caller = n
			break
		}
	}
	d.say("   node2 died with its request: %s asks for the same tool", caller.name)
	r, err := demoForgeOn(ctx, caller, demoSlugSpec)
	return demoAnswer{r, err}
}

// resumedOn asks the surviving nodes' cluster reports which node holds the
// second forge, when its run's claim did not say: "" when none does.
func (d *clusterDemoRun) resumedOn(ctx context.Context) string {
	on := ""
	for _, n := range d.nodes {
		if n.dead || on != "" {
			continue
		}
		c, err := admin.Dial(n.root)
		if err != nil {
			continue
		}
		var rep host.ClusterReport
		if c.Cluster(ctx, &rep) == nil {
			for _, m := range rep.Members {
				if len(m.Forges) > 0 && slices.Contains(m.Forges, forge.SpecHash(demoSlugSpec)) {
					on = demoNodeOf("", atoi(m.PID), d.nodes)
				}
			}
		}
		c.Close()
	}
	return on
}

// checkTools is the demo's step 4: every surviving node runs both tools;
// each failure counts as a lost tool.
func (d *clusterDemoRun) checkTools(ctx context.Context, fibPath, slugPath string) {
	for _, n := range d.nodes {
		if n.dead {
			continue
		}
		if v, err := demoExec(ctx, n, fibPath, `{"n": 10}`); err != nil || v != "55" {
			d.out.LostTools++
		}
		if v, err := demoExec(ctx, n, slugPath, `{"title": "Hello, Cluster!"}`); err != nil || v != `"hello-cluster"` {
			d.out.LostTools++
		}
	}
	d.say("4. every surviving node runs both tools: %d lost", d.out.LostTools)
}

// finish prints the JSON report with --json and fails when the cluster
// lost work: a tool lost, a journaled model answer asked again, or the
// forge not resumed on another node.
func (d *clusterDemoRun) finish() error {
	if d.asJSON {
		if err := fprintJSON(d.stdout, d.out); err != nil {
			return err
		}
	}
	out := d.out
	if out.LostTools != 0 || out.ModelRequests != demoUninterrupted || out.ResumedOn == "" || out.ResumedOn == out.Killed {
		return fmt.Errorf("demo --cluster: the cluster lost work: %+v", out)
	}
	d.say("\ncluster demo ok: no tool lost, no journaled model answer asked again")
	return nil
}

// demoClusterConfig adds settings to a tool root's agentos.json.
func demoClusterConfig(root string, add map[string]any) error {
	path := filepath.Join(root, host.ConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	for k, v := range add {
		cfg[k] = v
	}
	b, err = json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// demoWaitMembers waits until n's socket answers and its cluster has want
// members.
func demoWaitMembers(ctx context.Context, n *demoNode, want int) error {
	var last error
	for ctx.Err() == nil {
		if n.cmd.ProcessState != nil {
			return errors.New("the node process ended")
		}
		c, err := admin.Dial(n.root)
		if err == nil {
			var rep host.ClusterReport
			err = c.Cluster(ctx, &rep)
			c.Close()
			if err == nil && len(rep.Members) >= want {
				return nil
			}
			if err == nil {
				err = fmt.Errorf("%d of %d members", len(rep.Members), want)
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
}

func demoForgeOn(ctx context.Context, n *demoNode, spec string) (forge.Result, error) {
	c, err := admin.Dial(n.root)
	if err != nil {
		return forge.Result{}, err
	}
	defer c.Close()
	args, _ := json.Marshal(map[string]string{"spec": spec})
	raw, err := c.Call(ctx, "forge_tool", args)
	if err != nil {
		return forge.Result{}, fmt.Errorf("%s: forge_tool: %w", n.name, err)
	}
	var res forge.Result
	return res, json.Unmarshal(raw, &res)
}

// demoExec runs a tool on n and returns its JSON result.
func demoExec(ctx context.Context, n *demoNode, path, args string) (string, error) {
	c, err := admin.Dial(n.root)
	if err != nil {
		return "", err
	}
	defer c.Close()
	raw, err := c.Call(ctx, "exec_tool", json.RawMessage(`{"path":"`+path+`","args":`+args+`}`))
	if err != nil {
		return "", err
	}
	var res struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || !res.Success {
		return "", fmt.Errorf("%s: %s", n.name, raw)
	}
	return string(res.Result), nil
}

// demoFindForging waits for the second forge's first model answer to be
// journaled (its tests are running then) and returns the node holding
// the forge's run.
func demoFindForging(ctx context.Context, j *journal.Journal, nodes []*demoNode, asked <-chan int) (*demoNode, error) {
	if err := demoAwaitAnswers(ctx, asked, 2); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		runs, err := j.Runs() // Unfinished leaves out what the nodes hold
		if err != nil {
			return nil, err
		}
		seen = seen[:0]
		for _, r := range runs {
			n, _ := j.Count(r.ID)
			seen = append(seen, fmt.Sprintf("%s %s owner=%q pid=%d calls=%d", r.ID, r.Kind, r.Owner, r.Host.PID, n))
			if nd := demoForgingNode(j, r, nodes); nd != nil {
				return nd, nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, fmt.Errorf("demo --cluster: the second forge never showed its first answer in the journal (unfinished runs: %v)", seen)
}

// demoAwaitAnswers waits until the scripted model has answered n times
// (asked counts its answers), or ctx ends.
func demoAwaitAnswers(ctx context.Context, asked <-chan int, n int) error {
	for {
		select {
		case got := <-asked:
			if got >= n {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// demoForgingNode is the node running r when r is the second forge (the
// slug spec's), still running with a model answer journaled; else nil.
func demoForgingNode(j *journal.Journal, r journal.RunMeta, nodes []*demoNode) *demoNode {
	if r.Kind != forge.Kind || r.Status != journal.StatusRunning || !strings.Contains(string(r.Args), "slug") {
		return nil
	}
	if n, err := j.Count(r.ID); err != nil || n < 1 {
		return nil
	}
	name := demoNodeOf(r.Owner, r.Host.PID, nodes)
	if name == "" {
		return nil
	}
	for _, nd := range nodes {
		if nd.name == name {
			return nd
		}
	}
	return nil
}

// demoNodeOf names the node whose process owns a run (its claim's owner
// is host/pid/random), or whose pid is pid.
func demoNodeOf(owner string, pid int, nodes []*demoNode) string {
	if parts := strings.Split(owner, "/"); len(parts) == 3 {
		pid = atoi(parts[1])
	}
	for _, n := range nodes {
		if n.pid == pid && pid != 0 {
			return n.name
		}
	}
	return ""
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
