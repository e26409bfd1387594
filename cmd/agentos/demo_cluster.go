package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/cluster"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/node/admin"
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
	say := func(format string, a ...any) {
		if !asJSON {
			fmt.Fprintf(stdout, format+"\n", a...)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	// PostgreSQL's own directory (owned by the postgres user when the demo
	// runs as root, so not below the demo's 0700 directory).
	pgDir, err := os.MkdirTemp("", "agentos-cluster-demo-pg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(pgDir)
	pg, err := pgtest.StartServer(pgDir)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		return fmt.Errorf("demo --cluster: the nodes share their journal in PostgreSQL, and %w (apt-get install postgresql), then run it again", err)
	}
	if err != nil {
		return fmt.Errorf("demo --cluster: starting PostgreSQL for the shared journal: %w", err)
	}
	defer pg.Stop()
	say("agentos cluster demo in %s\n  shared journal: PostgreSQL on loopback (throwaway)", dir)

	steps := []llmtest.Step{
		demoSubmit("tools/math/fibonacci.ts", demoFibGood, demoFibTests),
		demoSubmit("tools/text/slugify.ts", demoSlugBuggy, demoSlowSlugTests),
		demoSubmit("tools/text/slugify.ts", demoSlug, demoSlowSlugTests),
	}
	const uninterrupted = 3 // one answer for the first forge, two for the second
	asked := make(chan int, len(steps))
	for i := range steps {
		steps[i].Check = func(llmtest.Received) error { asked <- i + 1; return nil }
	}
	model := llmtest.NewServer(steps)
	defer model.Close()

	bare := filepath.Join(dir, "tools.git")
	if err := repo.InitBare(bare, "main"); err != nil {
		return err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	health, err := demoPorts(3)
	if err != nil {
		return err
	}
	seeds := make([]string, len(health))
	for i, p := range health {
		seeds[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	env := append(os.Environ(), "AGENTOS_DEMO_CAPABILITY_KEY="+hex.EncodeToString(key), "AGENTOS_DEMO_JOURNAL="+pg.DSN)
	// The nodes talk over mutual TLS, as a deployment does: a CA and one
	// member certificate per node (what 'agentos cluster certs' makes).
	certs := filepath.Join(dir, "certs")
	if _, err := cluster.MakeCA(certs, "demo", 24*time.Hour); err != nil {
		return err
	}
	nodes := make([]*demoNode, 3)
	defer func() {
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
	}()
	for i := range nodes {
		n := &demoNode{name: fmt.Sprintf("node%d", i+1), root: filepath.Join(dir, fmt.Sprintf("node%d", i+1))}
		if _, err := host.Init(n.root, host.InitOptions{Upstream: bare}); err != nil {
			return err
		}
		cert, key, err := cluster.MakeMemberCert(certs, n.name, []string{"127.0.0.1"}, 24*time.Hour)
		if err != nil {
			return err
		}
		if err := demoClusterConfig(n.root, map[string]any{
			"llm": map[string]any{"base_url": model.URL(), "model": "scripted", "forge_attempts": 3},
			// The slugify tests spin on purpose (the kill lands while they
			// run): on a loaded machine they must not hit the 5 s default,
			// or the good answer fails as a timeout and the forge asks the
			// model a fourth time, which the script does not have.
			"limits":                   map[string]any{"timeout": "60s"},
			"capability":               map[string]any{"signing_key_env": "AGENTOS_DEMO_CAPABILITY_KEY"},
			"journal_postgres_dsn_env": "AGENTOS_DEMO_JOURNAL",
			"journal_lease":            "3s",
			"cluster": map[string]any{"enabled": true, "name": "demo", "seeds": seeds, "health_port": health[i],
				"cert": cert, "key": key, "ca": filepath.Join(certs, cluster.CACertFile)},
		}); err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		log, err := os.Create(filepath.Join(dir, n.name+".log"))
		if err != nil {
			return err
		}
		defer log.Close()
		n.cmd = exec.Command(self, "serve", "--root", n.root)
		n.cmd.Env, n.cmd.Stdout, n.cmd.Stderr = env, log, log
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := n.cmd.Start(); err != nil {
			return err
		}
		n.pid = n.cmd.Process.Pid
		nodes[i] = n
	}
	for _, n := range nodes {
		if err := demoWaitMembers(ctx, n, len(nodes)); err != nil {
			return fmt.Errorf("demo --cluster: %s did not join (its log: %s): %w", n.name, filepath.Join(dir, n.name+".log"), err)
		}
	}
	say("  %d node processes joined the cluster \"demo\" (seed list on loopback, mutual TLS with certificates from the demo's CA): pids %d, %d, %d", len(nodes), nodes[0].pid, nodes[1].pid, nodes[2].pid)

	out := clusterDemo{Nodes: len(nodes), Uninterrupted: uninterrupted}
	// 1. node 1 forges a tool.
	fib, err := demoForgeOn(ctx, nodes[0], demoFibSpec)
	if err != nil {
		return err
	}
	out.Forged++
	out.Tools = append(out.Tools, fib.Path)
	say("\n1. node1 forged %s (commit %.8s) with %d model request(s)", fib.Path, fib.Commit, model.Requests())
	// 2. node 2 runs it at once: the commit reached it through the cluster.
	if got, err := demoExec(ctx, nodes[1], fib.Path, `{"n": 10}`); err != nil || got != "55" {
		return fmt.Errorf("demo --cluster: node2 running %s: %s %v", fib.Path, got, err)
	}
	out.Reused++
	say("2. node2 ran it at once: fibonacci(10) = 55 (it pulled the commit announced over the cluster)")

	// 3. the second forge, killed in the middle.
	j, err := journal.OpenPostgres(pg.DSN, journal.Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	caller := nodes[1]
	type answer struct {
		res forge.Result
		err error
	}
	answers := make(chan answer, 1)
	go func() { r, err := demoForgeOn(ctx, caller, demoSlugSpec); answers <- answer{r, err} }()
	victim, err := demoFindForging(ctx, j, nodes, asked)
	if err != nil {
		return err
	}
	killed := time.Now()
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		return err
	}
	_, _ = victim.cmd.Process.Wait()
	victim.dead = true
	out.Killed = victim.name
	say("3. node2 asked for a second tool; the cluster placed its forge on %s, which got the model's first answer\n   (journaled) and was SIGKILLed while it tested that answer", victim.name)
	var got answer
	if victim == caller { // the caller died with the forge: ask again elsewhere
		<-answers
		for _, n := range nodes {
			if !n.dead {
				caller = n
				break
			}
		}
		say("   node2 died with its request: %s asks for the same tool", caller.name)
		r, err := demoForgeOn(ctx, caller, demoSlugSpec)
		got = answer{r, err}
	} else {
		say("   node2's request fails over by itself: its grain is activated again on a node alive")
		got = <-answers
	}
	if got.err != nil {
		return fmt.Errorf("demo --cluster: the interrupted forge did not complete: %w", got.err)
	}
	out.ResumeMS = time.Since(killed).Milliseconds()
	out.Forged++
	out.Tools = append(out.Tools, got.res.Path)
	meta, err := j.Get(got.res.RunID)
	if err != nil {
		return err
	}
	out.ResumedOn = demoNodeOf(meta.Owner, meta.Host.PID, nodes)
	for _, n := range nodes {
		if !n.dead && out.ResumedOn == "" {
			var rep host.ClusterReport
			if c, err := admin.Dial(n.root); err == nil {
				if c.Cluster(ctx, &rep) == nil {
					for _, m := range rep.Members {
						if len(m.Forges) > 0 && containsString(m.Forges, forge.SpecHash(demoSlugSpec)) {
							out.ResumedOn = demoNodeOf("", atoi(m.PID), nodes)
						}
					}
				}
				c.Close()
			}
		}
	}
	out.ModelRequests = model.Requests()
	say("   %s resumed the forge from the shared journal and finished it %.1f s after the kill: %d attempts, the model asked %d time(s) in all (%d without the crash)",
		out.ResumedOn, float64(out.ResumeMS)/1000, len(got.res.Attempts), out.ModelRequests, uninterrupted)

	// 4. every surviving node runs every tool.
	for _, n := range nodes {
		if n.dead {
			continue
		}
		if v, err := demoExec(ctx, n, fib.Path, `{"n": 10}`); err != nil || v != "55" {
			out.LostTools++
		}
		if v, err := demoExec(ctx, n, got.res.Path, `{"title": "Hello, Cluster!"}`); err != nil || v != `"hello-cluster"` {
			out.LostTools++
		}
	}
	say("4. every surviving node runs both tools: %d lost", out.LostTools)
	if asJSON {
		if err := fprintJSON(stdout, out); err != nil {
			return err
		}
	}
	if out.LostTools != 0 || out.ModelRequests != uninterrupted || out.ResumedOn == "" || out.ResumedOn == out.Killed {
		return fmt.Errorf("demo --cluster: the cluster lost work: %+v", out)
	}
	say("\ncluster demo ok: no tool lost, no journaled model answer asked again")
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

// demoPorts reserves n free loopback ports (released for the nodes).
func demoPorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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
	for {
		select {
		case n := <-asked:
			if n < 2 {
				continue
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		break
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
			if r.Kind != forge.Kind || r.Status != journal.StatusRunning || !strings.Contains(string(r.Args), "slug") {
				continue
			}
			if n, err := j.Count(r.ID); err == nil && n >= 1 {
				if name := demoNodeOf(r.Owner, r.Host.PID, nodes); name != "" {
					for _, nd := range nodes {
						if nd.name == name {
							return nd, nil
						}
					}
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, fmt.Errorf("demo --cluster: the second forge never showed its first answer in the journal (unfinished runs: %v)", seen)
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

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
