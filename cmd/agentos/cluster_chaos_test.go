//go:build !race

// The chaos test runs real node processes (this test binary as the agentos
// command): under -race they would be race-built and several times slower,
// and protoactor's cluster package reports races of its own there (see
// docs/CLUSTER.md); the plain `go test ./...` runs it.

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
	"github.com/agentos-run/agentos/internal/pgtest"
	"github.com/agentos-run/agentos/journal"
)

const chaosSpecs = 10

func chaosSpec(i int) string {
	return fmt.Sprintf("chaos tool %d: prefix the text with its tag t%d and a colon", i, i)
}

var chaosSpecRE = regexp.MustCompile(`chaos tool (\d+):`)

// chaosTool is the code the scripted model writes for spec i: the first
// attempt uses the wrong separator (its tests fail), the second is right.
// The tests spin a moment, so that kills land in the middle of forges.
func chaosTool(i int, good bool) (path, code, tests string) {
	name := fmt.Sprintf("t%d", i)
	path = "tools/chaos/" + name + ".ts"
	sep := ";"
	if good {
		sep = ":"
	}
	code = fmt.Sprintf(`/** Prefixes the text with its tag. @tag chaos */
export default function %s(args: { text: string }): string {
  return "%s%s" + args.text;
}
`, name, name, sep)
	tests = fmt.Sprintf(`const f = require('./%s').default;
const ROUNDS = 1500000;
export default async function (): Promise<void> {
  let spin = 0;
  for (let i = 0; i < ROUNDS; i++) { spin = (spin + i) %% ROUNDS; }
  const got = f({ text: "abc" });
  if (got !== "%s:abc") {
    throw new Error("got " + got + " (" + spin + ")");
  }
}
`, name, name)
	return path, code, tests
}

// chaosWant is what tool i answers for the text "abc", as JSON.
func chaosWant(i int) string { return fmt.Sprintf(`"t%d:abc"`, i) }

// chaosAsk is one request the scripted model received.
type chaosAsk struct {
	spec, messages int
	at             time.Time
}

// Issue 13's proof: 20 concurrent forges of 10 distinct specs across 3
// node processes while nodes are SIGKILLed and restarted at random. No tool
// is lost, no spec is forged twice, no model request whose answer was
// journaled is sent again, and every tool runs on every node.
func TestClusterChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test runs three node processes for a minute")
	}
	if !pgtest.Installed() {
		t.Skip("PostgreSQL is not installed (no initdb): install the postgresql package to run the chaos test")
	}
	t.Setenv("AGENTOS_CLI_CHILD", "1")
	dsn := pgtest.Start(t)
	dir := t.TempDir()
	if keep := os.Getenv("CHAOS_KEEP"); keep != "" { // the nodes' logs, for a post-mortem
		dir = keep
	}

	var mu sync.Mutex
	var asks []chaosAsk
	model := llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		spec := -1
		for _, m := range r.Messages {
			if g := chaosSpecRE.FindStringSubmatch(m.Content); g != nil {
				spec, _ = strconv.Atoi(g[1])
				break
			}
		}
		mu.Lock()
		asks = append(asks, chaosAsk{spec: spec, messages: len(r.Messages), at: time.Now()})
		mu.Unlock()
		if spec < 0 {
			return llmtest.Step{Status: 400, Error: "chaos: no spec in the request"}
		}
		path, code, tests := chaosTool(spec, len(r.Messages) > 2)
		args, _ := json.Marshal(map[string]string{"path": path, "code": code, "tests": tests})
		return llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call", Name: "submit_tool", Arguments: string(args)}}}
	})
	defer model.Close()

	bare := filepath.Join(dir, "tools.git")
	if err := repo.InitBare(bare, "main"); err != nil {
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
	env := append(os.Environ(), "CHAOS_KEY="+hex.EncodeToString(key), "CHAOS_JOURNAL="+dsn)
	nodes := make([]*demoNode, 3)
	var nodesMu sync.Mutex
	start := func(n *demoNode) {
		t.Helper()
		log, err := os.OpenFile(filepath.Join(dir, n.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		self, _ := os.Executable()
		cmd := exec.Command(self, "serve", "--root", n.root)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		nodesMu.Lock()
		n.cmd, n.pid, n.dead = cmd, cmd.Process.Pid, false
		nodesMu.Unlock()
		go func() { _ = cmd.Wait(); log.Close() }()
	}
	for i := range nodes {
		n := &demoNode{name: fmt.Sprintf("node%d", i+1), root: filepath.Join(dir, fmt.Sprintf("node%d", i+1))}
		if _, err := host.Init(n.root, host.InitOptions{Upstream: bare}); err != nil {
			t.Fatal(err)
		}
		if err := demoClusterConfig(n.root, map[string]any{
			"llm": map[string]any{"base_url": model.URL(), "model": "scripted", "forge_attempts": 3},
			// The tools' tests spin on purpose (kills land while they run):
			// measured at load 20 on 2 cores, one run took over the 5 s
			// default limit, so the good attempt failed as a timeout, every
			// forge gave up, and the callers' next forges asked the model
			// again (the failures of 2026-12-02). The limit is not what this
			// test is about.
			"limits":                   map[string]any{"timeout": "60s"},
			"capability":               map[string]any{"signing_key_env": "CHAOS_KEY"},
			"journal_postgres_dsn_env": "CHAOS_JOURNAL",
			"journal_lease":            "3s",
			"cluster":                  map[string]any{"enabled": true, "name": "chaos", "seeds": seeds, "health_port": health[i], "insecure_loopback": true},
		}); err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		start(n)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			nodesMu.Lock()
			cmd, dead := n.cmd, n.dead
			nodesMu.Unlock()
			if cmd != nil && !dead {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, n := range nodes {
		if err := demoWaitMembers(ctx, n, 3); err != nil {
			t.Fatalf("%s: %v (log %s)", n.name, err, filepath.Join(dir, n.name+".log"))
		}
	}

	alive := func() []*demoNode {
		nodesMu.Lock()
		defer nodesMu.Unlock()
		var out []*demoNode
		for _, n := range nodes {
			if !n.dead {
				out = append(out, n)
			}
		}
		return out
	}
	// The chaos: every 1.5 to 3 s one node is SIGKILLed and restarted a
	// second later, until the forges are done (at most 4 kills).
	rng := mrand.New(mrand.NewPCG(13, 1))
	forgesDone := make(chan struct{})
	var kills []string
	var chaos sync.WaitGroup
	chaos.Go(func() {
		for len(kills) < 4 {
			select {
			case <-forgesDone:
				return
			case <-time.After(time.Duration(1500+rng.IntN(1500)) * time.Millisecond):
			}
			up := alive()
			if len(up) < 3 {
				continue
			}
			v := up[rng.IntN(len(up))]
			nodesMu.Lock()
			_ = v.cmd.Process.Signal(syscall.SIGKILL)
			v.dead = true
			nodesMu.Unlock()
			kills = append(kills, v.name)
			time.Sleep(time.Second)
			start(v)
		}
	})

	type outcome struct {
		spec int
		res  forge.Result
		err  error
	}
	results := make(chan outcome, 2*chaosSpecs)
	var forges sync.WaitGroup
	for k := range 2 * chaosSpecs {
		spec := k % chaosSpecs
		forges.Go(func() {
			var last error
			for ctx.Err() == nil {
				up := alive()
				if len(up) == 0 {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				res, err := demoForgeOn(ctx, up[(k+len(up))%len(up)], chaosSpec(spec))
				if err == nil {
					results <- outcome{spec: spec, res: res}
					return
				}
				last = err // the node died under the call: ask again, elsewhere
				time.Sleep(200 * time.Millisecond)
			}
			results <- outcome{spec: spec, err: fmt.Errorf("%w (last: %v)", ctx.Err(), last)}
		})
	}
	forges.Wait()
	close(forgesDone)
	chaos.Wait()
	close(results)
	t.Logf("nodes killed and restarted: %v", kills)
	if len(kills) == 0 {
		t.Error("no node was killed: the chaos did not happen")
	}
	for o := range results {
		want, _, _ := chaosTool(o.spec, true)
		if o.err != nil || o.res.Path != want {
			t.Errorf("forge of spec %d: %+v %v", o.spec, o.res, o.err)
		}
	}

	// Every node back, every tool on every node.
	for _, n := range nodes {
		if err := demoWaitMembers(ctx, n, 3); err != nil {
			t.Fatalf("%s after the chaos: %v", n.name, err)
		}
	}
	lost := 0
	for i := range chaosSpecs {
		path, _, _ := chaosTool(i, true)
		for _, n := range nodes {
			if got, err := demoExec(ctx, n, path, `{"text": "abc"}`); err != nil || got != chaosWant(i) {
				lost++
				t.Errorf("%s runs %s: %s %v", n.name, path, got, err)
			}
		}
	}

	// The journal: one finished forge per spec, none left unfinished, and
	// no request whose answer was journaled asked again.
	j, err := journal.OpenPostgres(dsn, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	runs, err := j.Runs()
	if err != nil {
		t.Fatal(err)
	}
	okBySpec := map[int]int{}
	journaled := map[[2]int]time.Time{} // (spec, messages) -> when its answer was journaled, at the latest
	for _, r := range runs {
		if r.Kind != forge.Kind {
			continue
		}
		g := chaosSpecRE.FindStringSubmatch(string(r.Args))
		if g == nil {
			continue
		}
		spec, _ := strconv.Atoi(g[1])
		switch r.Status {
		case journal.StatusOK:
			okBySpec[spec]++
		case journal.StatusRunning:
			t.Errorf("forge run %s of spec %d is left unfinished", r.ID, spec)
		default:
			t.Errorf("forge run %s of spec %d ended %s: %s", r.ID, spec, r.Status, r.Error)
		}
		entries, err := j.Entries(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Driver != llm.Driver {
				continue
			}
			var req llm.Request
			if json.Unmarshal(e.Request, &req) != nil {
				continue
			}
			k := [2]int{spec, len(req.Messages)}
			if end := e.At.Add(e.Duration); journaled[k].IsZero() || end.Before(journaled[k]) {
				journaled[k] = end
			}
		}
	}
	for i := range chaosSpecs {
		if okBySpec[i] != 1 {
			t.Errorf("spec %d was forged %d times, want once", i, okBySpec[i])
		}
		// No duplicate commit: the tool and its tests each changed once
		// upstream (issue 24).
		path, _, _ := chaosTool(i, true)
		for _, p := range []string{path, strings.TrimSuffix(path, ".ts") + ".test.ts"} {
			out, err := exec.Command("git", "--git-dir", bare, "log", "--format=%H", "main", "--", p).Output()
			if err != nil {
				t.Fatalf("git log %s: %v", p, err)
			}
			if n := len(strings.Fields(string(out))); n != 1 {
				t.Errorf("%d upstream commits changed %s, want 1", n, p)
			}
		}
	}
	repeated := 0
	mu.Lock()
	for _, a := range asks {
		if at, ok := journaled[[2]int{a.spec, a.messages}]; ok && a.at.After(at) {
			repeated++
			t.Errorf("the model was asked again for spec %d (%d messages) at %s, after its answer was journaled at %s", a.spec, a.messages, a.at.Format(time.StampMilli), at.Format(time.StampMilli))
		}
	}
	t.Logf("model requests: %d for %d specs (%d without any crash); journaled answers asked again: %d; tools lost: %d",
		len(asks), chaosSpecs, 2*chaosSpecs, repeated, lost)
	mu.Unlock()
}
