// Command cluster-three-nodes runs three agentos nodes in one process,
// joined in one cluster by a seed list on loopback and sharing a Git
// upstream: two nodes ask for the same tool at the same moment and get the
// same forge (the scripted model is asked once), the third runs the tool
// at once, and the cluster's report shows which node holds the forge.
// No network, no API key, no PostgreSQL (each node journals to its own
// file; docs/CLUSTER.md says what a shared journal adds).
//
//	go run ./examples/cluster-three-nodes
//
// It exits 1 if the cluster does not behave as described.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/loopport"
)

const (
	spec  = "a tool that reverses the words of a sentence"
	code  = "/** Reverses the words of a sentence. @tag text */\nexport default function reverse(args: { text: string }): string {\n  return args.text.split(\" \").reverse().join(\" \");\n}\n"
	tests = "const reverse = require('./reverse').default;\nexport default async function (): Promise<void> {\n  const got = reverse({ text: \"agents forge tools\" });\n  if (got !== \"tools forge agents\") {\n    throw new Error(\"got \" + got);\n  }\n}\n"
)

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: one forge for two callers, the tool on every node")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "agentos-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The model holds its one answer until both nodes have asked.
	args, _ := json.Marshal(map[string]string{"path": "tools/text/reverse.ts", "code": code, "tests": tests})
	step := llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}
	asked := make(chan struct{})
	step.Check = func(llmtest.Received) error { close(asked); time.Sleep(300 * time.Millisecond); return nil }
	model := llmtest.NewServer([]llmtest.Step{step})
	defer model.Close()

	// Every node signs capability tokens with the same key, from the
	// environment (never agentos.json).
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	os.Setenv("AGENTOS_CAPABILITY_KEY", hex.EncodeToString(key))

	upstream := filepath.Join(dir, "tools.git")
	if err := repo.InitBare(upstream, "main"); err != nil {
		return err
	}
	// The nodes' seed list names every node's port before any starts:
	// ports free now, drawn where no other program's port 0 lands before
	// the nodes bind them (on your machines, fixed ports from your config).
	ports, err := loopport.Reserve(3)
	if err != nil {
		return err
	}
	var seeds []string
	for _, p := range ports {
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", p))
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	nodes := make([]*host.Runtime, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		root := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if _, err := host.Init(root, host.InitOptions{Upstream: upstream}); err != nil {
			return err
		}
		cfg, err := host.LoadConfig(root)
		if err != nil {
			return err
		}
		cfg.Root, cfg.Logger = root, quiet
		cfg.LLM = host.LLMConfig{BaseURL: model.URL(), Model: "scripted"}
		cfg.Capability.SigningKeyEnv = "AGENTOS_CAPABILITY_KEY"
		// Three nodes on this machine's loopback: plaintext, said so. Nodes
		// on a network use certificates (cluster.cert/key/ca).
		cfg.Cluster = host.ClusterConfig{Enabled: true, Name: "example", Seeds: seeds, HealthPort: ports[i], InsecureLoopback: true}
		// Concurrently: protoactor's member start takes a second.
		wg.Go(func() { nodes[i], errs[i] = host.Start(ctx, cfg) })
	}
	wg.Wait()
	for i, rt := range nodes {
		if rt != nil {
			defer rt.Close()
		}
		if errs[i] != nil {
			return fmt.Errorf("node%d: %w", i+1, errs[i])
		}
	}
	for _, rt := range nodes {
		if err := rt.Member().WaitMembers(ctx, 3); err != nil {
			return err
		}
	}
	fmt.Printf("3 nodes in the cluster \"example\": %s, %s, %s\n", nodes[0].Member().Address(), nodes[1].Member().Address(), nodes[2].Member().Address())

	// 1. node1 and node2 ask for the same tool at the same moment.
	type answer struct {
		res forge.Result
		err error
	}
	answers := make(chan answer, 2)
	forgeOn := func(rt *host.Runtime) {
		a, _ := json.Marshal(map[string]string{"spec": spec})
		out, err := rt.Call(ctx, "forge_tool", a)
		var res forge.Result
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		answers <- answer{res, err}
	}
	go forgeOn(nodes[0])
	<-asked // node1's forge waits on the model
	go forgeOn(nodes[1])
	a, b := <-answers, <-answers
	if a.err != nil || b.err != nil {
		return fmt.Errorf("forge_tool: %v / %v", a.err, b.err)
	}
	if a.res.Path != b.res.Path || a.res.RunID != b.res.RunID {
		return fmt.Errorf("the two callers got different forges: %+v / %+v", a.res, b.res)
	}
	fmt.Printf("node1 and node2 asked for %q at once: both got %s from forge run %s\n", spec, a.res.Path, a.res.RunID)
	fmt.Printf("the model was asked %d time(s)\n", model.Requests())
	if model.Requests() != 1 {
		return fmt.Errorf("the model was asked %d times for one spec", model.Requests())
	}

	// 2. node3 runs it: the commit came to it through the cluster.
	out, err := nodes[2].Call(ctx, "exec_tool", json.RawMessage(`{"path":"`+a.res.Path+`","args":{"text":"nodes share one tool memory"}}`))
	if err != nil || !strings.Contains(string(out), `"result":"memory tool one share nodes"`) {
		return fmt.Errorf("node3 exec_tool: %s %v", out, err)
	}
	fmt.Printf("node3 exec_tool %s -> \"memory tool one share nodes\"\n", a.res.Path)

	// 3. Which node holds the forge: the cluster's report, from node3.
	rep, err := nodes[2].ClusterReport(ctx)
	if err != nil {
		return err
	}
	holders := 0
	for _, m := range rep.Members {
		holds := "-"
		for _, f := range m.Forges {
			if f == forge.SpecHash(spec) {
				holds, holders = "the forge of "+fmt.Sprintf("%q", spec), holders+1
			}
		}
		fmt.Printf("  member %s (%s): holds %s\n", m.Address, filepath.Base(m.Root), holds)
	}
	fmt.Printf("cluster status: %d members, %d of them holds the spec's forge\n", len(rep.Members), holders)
	if len(rep.Members) != 3 || holders != 1 {
		return fmt.Errorf("want 3 members and one holder, got %+v", rep)
	}
	return nil
}
