//go:build !race

// The forge fault suite (issue 24): real node processes (this test binary
// as the agentos command), a real PostgreSQL journal and a real Git
// upstream; one fault per test, injected while a forge is in flight, then
// the invariants. Not under -race, for the reasons of the chaos test.
//
// Each test forges one spec per round; AGENTOS_FAULT_ROUNDS=N runs N
// rounds (the soak: `AGENTOS_FAULT_ROUNDS=20 go test ./cmd/agentos -run
// TestForgeFault -timeout 1h`).

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/journal"
	"github.com/jackc/pgx/v5"
)

// faultLease is the nodes' journal lease: a dead or paused node's forge is
// resumable this long after its last renewal.
const faultLease = 3 * time.Second

// faultAnswerBound is how long a caller on a live node may wait for its
// forge_tool answer after a fault.
const faultAnswerBound = 90 * time.Second

// faultCluster is three node processes sharing a PostgreSQL journal and a
// Git upstream, and a scripted model that counts what it is asked.
type faultCluster struct {
	t     *testing.T
	dir   string
	bare  string
	pg    *pgtest.Server
	model *llmtest.Server
	env   []string
	nodes []*demoNode

	mu     sync.Mutex
	asks   []chaosAsk
	serial int
	// holds: spec -> the first request of its second attempt waits on
	// this channel (so that a fault lands while the forge waits on the
	// model); arrived is closed when that request came.
	holds   map[int]chan struct{}
	arrived map[int]chan struct{}
}

func faultRounds(t *testing.T) int {
	if s := os.Getenv("AGENTOS_FAULT_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("AGENTOS_FAULT_ROUNDS=%q: want a positive number of rounds", s)
		}
		return n
	}
	return 1
}

func newFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("the fault suite runs three node processes")
	}
	if !pgtest.Installed() {
		t.Skip("PostgreSQL is not installed (no initdb): install the postgresql package to run the fault suite")
	}
	t.Setenv("AGENTOS_CLI_CHILD", "1")
	c := &faultCluster{t: t, dir: t.TempDir(), holds: map[int]chan struct{}{}, arrived: map[int]chan struct{}{}}
	if keep := os.Getenv("CHAOS_KEEP"); keep != "" { // the nodes' logs, for a post-mortem
		c.dir = keep
	}
	pgDir, err := os.MkdirTemp("", "agentos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pgDir) })
	if c.pg, err = pgtest.StartServer(pgDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.pg.Stop)
	c.model = llmtest.NewResponder(c.respond)
	t.Cleanup(c.model.Close)
	c.bare = filepath.Join(c.dir, "tools.git")
	if err := repo.InitBare(c.bare, "main"); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	health, err := loopport.Reserve(3)
	if err != nil {
		t.Fatal(err)
	}
	seeds := make([]string, len(health))
	for i, p := range health {
		seeds[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	c.env = append(os.Environ(), "CHAOS_KEY="+hex.EncodeToString(key), "CHAOS_JOURNAL="+c.pg.DSN)
	for i := range 3 {
		n := &demoNode{name: fmt.Sprintf("node%d", i+1), root: filepath.Join(c.dir, fmt.Sprintf("node%d", i+1))}
		if _, err := host.Init(n.root, host.InitOptions{Upstream: c.bare}); err != nil {
			t.Fatal(err)
		}
		if err := demoClusterConfig(n.root, map[string]any{
			"llm": map[string]any{"base_url": c.model.URL(), "model": "scripted", "forge_attempts": 3},
			// The tests spin (chaosTool): not bounded by the 5 s default
			// on a loaded machine (see TestClusterChaos).
			"limits":                   map[string]any{"timeout": "60s"},
			"capability":               map[string]any{"signing_key_env": "CHAOS_KEY"},
			"journal_postgres_dsn_env": "CHAOS_JOURNAL",
			"journal_lease":            faultLease.String(),
			"cluster":                  map[string]any{"enabled": true, "name": "faults", "seeds": seeds, "health_port": health[i], "insecure_loopback": true},
		}); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
		c.start(n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.mu.Lock()
			cmd, dead := n.cmd, n.dead
			c.mu.Unlock()
			if cmd != nil && !dead {
				_ = cmd.Process.Signal(syscall.SIGCONT)
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	})
	c.waitMembers()
	return c
}

// respond is the scripted model: the first attempt of spec i fails its
// tests, the second passes. Every answer differs from the others in a
// comment (a real model never answers twice alike), so that a tool
// committed twice shows as two commits.
func (c *faultCluster) respond(r llmtest.Received) llmtest.Step {
	spec := -1
	for _, m := range r.Messages {
		if g := chaosSpecRE.FindStringSubmatch(m.Content); g != nil {
			spec, _ = strconv.Atoi(g[1])
			break
		}
	}
	if spec < 0 {
		return llmtest.Step{Status: 400, Error: "faults: no spec in the request"}
	}
	good := len(r.Messages) > 2
	c.mu.Lock()
	c.asks = append(c.asks, chaosAsk{spec: spec, messages: len(r.Messages), at: time.Now()})
	c.serial++
	serial := c.serial
	hold, held := c.holds[spec]
	if good && held {
		delete(c.holds, spec)
		close(c.arrived[spec])
	}
	c.mu.Unlock()
	if good && held {
		<-hold
	}
	path, code, tests := chaosTool(spec, good)
	code = fmt.Sprintf("// answer %d\n%s", serial, code)
	args, _ := json.Marshal(map[string]string{"path": path, "code": code, "tests": tests})
	return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call", Name: "submit_tool", Arguments: string(args)}}}
}

// hold makes the first second-attempt request of spec wait until the
// returned release is called; arrived is closed when it came.
func (c *faultCluster) hold(spec int) (arrived <-chan struct{}, release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, a := make(chan struct{}), make(chan struct{})
	c.holds[spec], c.arrived[spec] = h, a
	var once sync.Once
	return a, func() { once.Do(func() { close(h) }) }
}

func (c *faultCluster) start(n *demoNode) {
	c.t.Helper()
	log, err := os.OpenFile(filepath.Join(c.dir, n.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "serve", "--root", n.root)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.env, log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	n.cmd, n.pid, n.dead = cmd, cmd.Process.Pid, false
	c.mu.Unlock()
	go func() { _ = cmd.Wait(); log.Close() }()
}

func (c *faultCluster) kill(n *demoNode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	n.dead = true
}

func (c *faultCluster) waitMembers() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range c.nodes {
		if err := demoWaitMembers(ctx, n, 3); err != nil {
			c.t.Fatalf("%s: %v\n%s", n.name, err, c.logTails())
		}
	}
}

// logTails returns the last lines of every node's log: the test's
// directory, and the logs with it, are gone once it failed (CI once saw a
// cluster stay at 2 of 3 members, with nothing left to say why).
func (c *faultCluster) logTails() string {
	var b strings.Builder
	for _, n := range c.nodes {
		data, err := os.ReadFile(filepath.Join(c.dir, n.name+".log"))
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s.log (last %d lines; %v):\n%s\n", n.name, min(len(lines), 30), err, strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
	return b.String()
}

// journal opens the shared journal (closed when the test ends).
func (c *faultCluster) journal() *journal.Journal {
	c.t.Helper()
	j, err := journal.OpenPostgres(c.pg.DSN, journal.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { j.Close() })
	return j
}

// holder returns the node whose process runs spec's unfinished forge.
func (c *faultCluster) holder(j *journal.Journal, spec int) *demoNode {
	c.t.Helper()
	runs, err := j.Runs()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range runs {
		if s, ok := forgerun.SpecOf(r); ok && s == chaosSpec(spec) && r.Status == journal.StatusRunning {
			for _, n := range c.nodes {
				if n.pid == r.PID {
					return n
				}
			}
			c.t.Fatalf("forge run %s is hosted by pid %d, no node of the test", r.ID, r.PID)
		}
	}
	c.t.Fatalf("spec %d has no forge in flight", spec)
	return nil
}

// faultCall is one forge_tool caller.
type faultCall struct {
	node *demoNode
	res  forge.Result
	err  error
	took time.Duration
}

// callAll asks forge_tool for spec on every node at once.
func (c *faultCluster) callAll(spec int) (calls []*faultCall, wait func()) {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		fc := &faultCall{node: n}
		calls = append(calls, fc)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), faultAnswerBound)
			defer cancel()
			start := time.Now()
			fc.res, fc.err = demoForgeOn(ctx, n, chaosSpec(spec))
			fc.took = time.Since(start)
		})
	}
	return calls, wg.Wait
}

// answered checks that every caller on a node that was not faulted got
// the tool.
func (c *faultCluster) answered(spec int, calls []*faultCall, faulted *demoNode) {
	c.t.Helper()
	want, _, _ := chaosTool(spec, true)
	for _, fc := range calls {
		if fc.node == faulted {
			c.t.Logf("the caller on the faulted node %s: %v %v after %s", fc.node.name, fc.res.Path, fc.err, fc.took.Round(time.Millisecond))
			continue
		}
		if fc.err != nil || fc.res.Path != want {
			c.t.Errorf("caller on %s: %+v %v after %s (want %s)", fc.node.name, fc.res, fc.err, fc.took.Round(time.Millisecond), want)
		}
	}
}

// faultTestsPath is where the tests of spec's tool are kept.
func faultTestsPath(spec int) string {
	path, _, _ := chaosTool(spec, true)
	return strings.TrimSuffix(path, ".ts") + ".test.ts"
}

// upstreamCommits counts the upstream commits that changed path.
func (c *faultCluster) upstreamCommits(path string) int {
	c.t.Helper()
	out, err := exec.Command("git", "--git-dir", c.bare, "log", "--format=%H", "main", "--", path).Output()
	if err != nil {
		c.t.Fatalf("git log %s: %v", path, err)
	}
	return len(strings.Fields(string(out)))
}

// check asserts the invariants for spec: no lost tool (it is upstream
// and runs on a node), no duplicate commit, one forge run that ended ok
// and none left running, no model request whose answer was journaled
// asked again.
func (c *faultCluster) check(j *journal.Journal, spec int) {
	c.t.Helper()
	path, _, _ := chaosTool(spec, true)
	testsPath := faultTestsPath(spec)
	if n := c.upstreamCommits(path); n != 1 {
		c.t.Errorf("spec %d: %d upstream commits changed %s, want exactly 1", spec, n, path)
	}
	if n := c.upstreamCommits(testsPath); n != 1 {
		c.t.Errorf("spec %d: %d upstream commits changed %s, want exactly 1", spec, n, testsPath)
	}
	runs, err := j.Runs()
	if err != nil {
		c.t.Fatal(err)
	}
	ok := 0
	journaled := map[int]time.Time{} // messages -> when its answer was journaled
	for _, r := range runs {
		if s, isForge := forgerun.SpecOf(r); !isForge || s != chaosSpec(spec) {
			continue
		}
		switch r.Status {
		case journal.StatusOK:
			ok++
		case journal.StatusRunning:
			c.t.Errorf("spec %d: forge run %s is left running", spec, r.ID)
		default:
			c.t.Errorf("spec %d: forge run %s ended %s: %s", spec, r.ID, r.Status, r.Error)
		}
		entries, err := j.Entries(r.ID)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, e := range entries {
			var req llm.Request
			if e.Driver != llm.Driver || json.Unmarshal(e.Request, &req) != nil {
				continue
			}
			if end := e.At.Add(e.Duration); journaled[len(req.Messages)].IsZero() || end.Before(journaled[len(req.Messages)]) {
				journaled[len(req.Messages)] = end
			}
		}
	}
	if ok != 1 {
		c.t.Errorf("spec %d: %d forge runs ended ok, want 1", spec, ok)
	}
	c.mu.Lock()
	for _, a := range c.asks {
		if at, done := journaled[a.messages]; a.spec == spec && done && a.at.After(at) {
			c.t.Errorf("spec %d: the model was asked again (%d messages) at %s, after its answer was journaled at %s", spec, a.messages, a.at.Format(time.StampMilli), at.Format(time.StampMilli))
		}
	}
	c.mu.Unlock()
}

// TestForgeFaultKillHolder: the node forging a spec is SIGKILLed while
// the forge waits on the model. Another node resumes it once the lease
// lapses (its journaled first answer replayed) and every caller on a live
// node is answered; the restarted node does not forge it again.
func TestForgeFaultKillHolder(t *testing.T) {
	c := newFaultCluster(t)
	j := c.journal()
	for round := range faultRounds(t) {
		spec := 100 + round
		arrived, release := c.hold(spec)
		calls, wait := c.callAll(spec)
		<-arrived
		h := c.holder(j, spec)
		killed := time.Now()
		c.kill(h)
		release() // the answer goes to a dead node
		wait()
		c.answered(spec, calls, h)
		t.Logf("round %d: %s killed; callers on the live nodes answered within %s of the kill (lease %s)", round, h.name, time.Since(killed).Round(100*time.Millisecond), faultLease)
		c.start(h)
		c.waitMembers()
		c.check(j, spec)
	}
}

// TestForgeFaultPausedHolder: the node forging a spec is paused (SIGSTOP)
// past its lease while its forge waits on the model; another node resumes
// and finishes the forge; the paused node is resumed (SIGCONT) and its
// model answer arrives. Its journal writes carry a stale fencing token and
// are refused, so it commits nothing: one commit of the tool upstream.
func TestForgeFaultPausedHolder(t *testing.T) {
	c := newFaultCluster(t)
	j := c.journal()
	for round := range faultRounds(t) {
		spec := 200 + round
		arrived, release := c.hold(spec)
		calls, wait := c.callAll(spec)
		<-arrived
		h := c.holder(j, spec)
		if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		// The callers on the other nodes are answered by the forge another
		// node resumed; the paused node's own caller waits with it.
		deadline := time.Now().Add(faultAnswerBound)
		for time.Now().Before(deadline) && c.upstreamCommits(faultTestsPath(spec)) == 0 {
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("round %d: %s paused; another node committed the tool %s later", round, h.name, time.Since(paused).Round(100*time.Millisecond))
		if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		release() // the paused node's model answer arrives now
		wait()
		c.answered(spec, calls, h)
		// What the woken node does with its answer happens within a few
		// seconds: give it time to (wrongly) commit, then look.
		time.Sleep(2 * faultLease)
		// The woken node rejoins the membership by itself (the seeds
		// provider: under a new id), without a restart.
		c.waitMembers()
		c.check(j, spec)
	}
}

// TestForgeFaultPostgresRestart: the journal's PostgreSQL server restarts
// (immediate shutdown, down past the lease) just as a forge that committed
// its tool writes its end. The end cannot be written: the caller is told
// so (not a silent success), the run stays running but is no longer held,
// and the next call of the spec resumes it, finds the tool committed and
// ends it: one commit, no run left running, no answer asked again.
func TestForgeFaultPostgresRestart(t *testing.T) {
	c := newFaultCluster(t)
	j := c.journal()
	for round := range faultRounds(t) {
		spec := 300 + round
		path, _, _ := chaosTool(spec, true)
		arrived, release := c.hold(spec)
		calls, wait := c.callAll(spec)
		<-arrived
		h := c.holder(j, spec)
		runID := c.running(j, spec)
		conn, err := pgx.Connect(context.Background(), c.pg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		release()
		// The passing attempt's test run is journaled: what the forge
		// writes next is its end (after committing the tool). Hold the
		// run's row, so that the end waits on it, and stop the server
		// under it.
		for deadline := time.Now().Add(faultAnswerBound); !c.testsPassedJournaled(j, runID); {
			if time.Now().After(deadline) {
				t.Fatalf("spec %d: the passing test run was not journaled", spec)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := tx.Exec(context.Background(), "SELECT 1 FROM agentos_journal_runs WHERE id = $1 FOR UPDATE", runID); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(faultAnswerBound); c.upstreamCommits(faultTestsPath(spec)) == 0; {
			if time.Now().After(deadline) {
				t.Fatalf("spec %d: the tool was not committed", spec)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // the end is waiting on the row
		c.pg.Stop()
		down := time.Now()
		time.Sleep(faultLease + 2*time.Second) // past the forge's retries of its end
		if err := c.pg.Start(); err != nil {
			t.Fatal(err)
		}
		wait()
		t.Logf("round %d: PostgreSQL down %s while %s wrote the end of forge %s; callers: %s", round, time.Since(down).Round(100*time.Millisecond), h.name, runID, c.outcomes(calls))
		for _, fc := range calls {
			if fc.err == nil && fc.res.Path == path {
				continue
			}
			if fc.err == nil || !strings.Contains(fc.err.Error(), "could not record the end") {
				t.Errorf("caller on %s: %+v %v; want the tool, or told that its end was not recorded", fc.node.name, fc.res, fc.err)
			}
		}
		// The next call of the spec (any node) resumes the forge and ends it.
		calls, wait = c.callAll(spec)
		wait()
		c.answered(spec, calls, nil)
		c.check(j, spec)
	}
}

// testsPassedJournaled reports whether run holds the journaled test run
// of a second attempt (the passing one).
func (c *faultCluster) testsPassedJournaled(j *journal.Journal, run string) bool {
	entries, err := j.Entries(run)
	if err != nil {
		c.t.Fatal(err)
	}
	asked := 0
	for _, e := range entries {
		switch {
		case e.Driver == llm.Driver:
			asked++
		case e.Driver == "forge" && e.Op == "run" && asked >= 2:
			return true
		}
	}
	return false
}

// running returns the id of spec's forge run in flight.
func (c *faultCluster) running(j *journal.Journal, spec int) string {
	c.t.Helper()
	runs, err := j.Runs()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range runs {
		if s, ok := forgerun.SpecOf(r); ok && s == chaosSpec(spec) && r.Status == journal.StatusRunning {
			return r.ID
		}
	}
	c.t.Fatalf("spec %d has no forge in flight", spec)
	return ""
}

// outcomes says what each caller got, for the log.
func (c *faultCluster) outcomes(calls []*faultCall) string {
	var out []string
	for _, fc := range calls {
		if fc.err != nil {
			out = append(out, fmt.Sprintf("%s: error after %s", fc.node.name, fc.took.Round(100*time.Millisecond)))
		} else {
			out = append(out, fmt.Sprintf("%s: %s (reused %v) after %s", fc.node.name, fc.res.Path, fc.res.Reused, fc.took.Round(100*time.Millisecond)))
		}
	}
	return strings.Join(out, "; ")
}
