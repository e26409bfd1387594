package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/kerneltools"
)

// gitRoot initialises a tool root sharing bare and starts a runtime on it.
func gitRoot(t *testing.T, bare string, tweak ...func(*host.Config)) (*host.Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := host.Init(dir, host.InitOptions{Upstream: bare}); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root, cfg.Isolation = dir, "inprocess"
	for _, f := range tweak {
		f(&cfg)
	}
	return start(t, cfg), dir
}

// history returns the commit messages of main, newest first, and checks
// the history is linear.
func history(t *testing.T, bare string) []string {
	t.Helper()
	r, _ := gogit.PlainOpen(bare)
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	c, _ := r.CommitObject(ref.Hash())
	for c != nil {
		if c.NumParents() > 1 {
			t.Fatalf("a merge commit in the history: %s", c.Message)
		}
		msgs = append(msgs, strings.TrimSpace(c.Message))
		if c.NumParents() == 0 {
			break
		}
		c, _ = c.Parent(0)
	}
	return msgs
}

func write(t *testing.T, rt *host.Runtime, path, content string) json.RawMessage {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"path": path, "content": content})
	out, err := rt.Call(context.Background(), "write_file", args)
	if err != nil {
		t.Fatalf("write_file %s: %v", path, err)
	}
	return out
}

// The seed's cold start: boot, write fib, check it, run it, stop; a new
// runtime in a new directory clones the upstream and finds the file byte
// for byte, registered.
func TestColdStart(t *testing.T) {
	bare := upstream(t)
	rt, _ := gitRoot(t, bare)
	write(t, rt, samples.FibPath, samples.FibTool)
	if out, err := rt.Call(context.Background(), "check_tool", json.RawMessage(`{"path":"tools/math/fib.ts"}`)); err != nil || !strings.Contains(string(out), `"valid":true`) {
		t.Fatalf("check_tool: %s %v", out, err)
	}
	out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`))
	if err != nil || !strings.Contains(string(out), `"result":55`) {
		t.Fatalf("exec_tool: %s %v", out, err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if got := upstreamTree(t, bare, "main")[samples.FibPath]; got != samples.FibTool {
		t.Fatalf("upstream fib.ts = %q", got)
	}
	if msgs := history(t, bare); !strings.Contains(msgs[0], samples.FibPath) {
		t.Fatalf("last commit %q does not name the tool", msgs[0])
	}

	rt2, dir2 := gitRoot(t, bare)
	b, err := os.ReadFile(filepath.Join(dir2, samples.FibPath))
	if err != nil || string(b) != samples.FibTool {
		t.Fatalf("the new runtime's fib.ts: %q %v", b, err)
	}
	if _, ok := rt2.Registry().Get(samples.FibPath); !ok {
		t.Fatal("the cloned tool is not registered")
	}
}

// Hydration: a tool committed upstream by someone else appears at boot.
func TestHydrationFromUpstream(t *testing.T) {
	bare := upstream(t)
	rt, _ := gitRoot(t, bare)
	write(t, rt, "tools/a.ts", "/** First. */\nexport default function (): number { return 1; }\n")
	rt.Close()
	// Another node adds a tool.
	other, _ := gitRoot(t, bare)
	write(t, other, "tools/b.ts", "/** Second. */\nexport default function (): number { return 2; }\n")
	other.Close()
	// A third boots and has both.
	third, dir := gitRoot(t, bare)
	for _, p := range []string{"tools/a.ts", "tools/b.ts"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("%s missing after hydration: %v", p, err)
		}
	}
	out, err := third.Call(context.Background(), "search_tools", json.RawMessage(`{"query":"second"}`))
	if err != nil || !strings.Contains(string(out), "tools/b.ts") {
		t.Fatalf("search_tools: %s %v", out, err)
	}
}

// Scenario 10, registry integrity: the JSDoc lands in meta.json, search
// finds the tool above the reuse threshold.
func TestRegistryIntegrity(t *testing.T) {
	bare := upstream(t)
	rt, dir := gitRoot(t, bare)
	write(t, rt, "tools/finance/interest.ts", "/** Calculates compound interest over years. @tag finance */\nexport default function (a: { principal: number; rate: number; years: number }): number {\n  return a.principal * Math.pow(1 + a.rate, a.years);\n}\n")
	var meta struct {
		Tools map[string]struct {
			Description string   `json:"description"`
			Tags        []string `json:"tags"`
		} `json:"tools"`
	}
	shard := registry.ShardFile(host.RegistryFile, "tools/finance/interest.ts")
	b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(shard)))
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if e := meta.Tools["tools/finance/interest.ts"]; !strings.Contains(e.Description, "compound interest") || len(e.Tags) != 1 {
		t.Fatalf("registry entry in %s = %+v", shard, e)
	}
	if !strings.Contains(upstreamTree(t, bare, "main")[shard], "compound interest") {
		t.Fatalf("the registry's shard %s was not committed with the tool", shard)
	}
	out, err := rt.Call(context.Background(), "search_tools", json.RawMessage(`{"query":"compound interest calculator","limit":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var hits []kerneltools.SearchHit
	if err := json.Unmarshal(out, &hits); err != nil || len(hits) == 0 || hits[0].Path != "tools/finance/interest.ts" || hits[0].Score < 0.85 {
		t.Fatalf("search: %s %v", out, err)
	}
}

// Distinct tools written by 2, then 8 runtimes at the same moment all
// arrive upstream, in a linear history with every commit.
func TestConcurrentRuntimes(t *testing.T) {
	for _, nodes := range []int{2, 8} {
		t.Run(fmt.Sprint(nodes), func(t *testing.T) {
			bare := upstream(t)
			var rts []*host.Runtime
			for range nodes {
				rt, _ := gitRoot(t, bare)
				rts = append(rts, rt)
			}
			const each = 10
			var wg sync.WaitGroup
			for i, rt := range rts {
				wg.Go(func() {
					for j := range each {
						p := fmt.Sprintf("tools/n%d/t%d.ts", i, j)
						write(t, rt, p, fmt.Sprintf("/** Tool %d of node %d. */\nexport default function (): number { return %d; }\n", j, i, j))
					}
				})
			}
			wg.Wait()
			tree := upstreamTree(t, bare, "main")
			for i := range nodes {
				for j := range each {
					if _, ok := tree[fmt.Sprintf("tools/n%d/t%d.ts", i, j)]; !ok {
						t.Errorf("tools/n%d/t%d.ts is not upstream", i, j)
					}
				}
			}
			msgs := history(t, bare)
			writes := 0
			for _, m := range msgs {
				if strings.Contains(m, "write tools/") {
					writes++
				}
			}
			if writes != nodes*each {
				t.Fatalf("%d write commits upstream, want %d", writes, nodes*each)
			}
			listed := 0
			for p, content := range tree {
				if !strings.HasPrefix(p, "meta/") {
					continue
				}
				var meta struct {
					Tools map[string]json.RawMessage `json:"tools"`
				}
				if err := json.Unmarshal([]byte(content), &meta); err != nil {
					t.Fatalf("upstream %s: %v", p, err)
				}
				listed += len(meta.Tools)
			}
			if listed != nodes*each {
				t.Fatalf("the upstream registry shards list %d tools, want %d: they must be regenerated, not hand-merged", listed, nodes*each)
			}
		})
	}
}

// Gatekeeper mode: the write goes to a review branch, main is untouched,
// and the pull-request adapter is called with the right title and head.
func TestGatekeeper(t *testing.T) {
	t.Setenv("AGENTOS_GIT_TOKEN", "s3cret")
	var mu sync.Mutex
	var got struct {
		Title, Head, Base string
		Auth, Path        string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		_ = json.Unmarshal(b, &got)
		got.Auth, got.Path = r.Header.Get("Authorization"), r.URL.Path
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"html_url":"https://github.example/acme/tools/pull/7"}`))
	}))
	defer srv.Close()
	bare := upstream(t)
	rt, _ := gitRoot(t, bare, func(c *host.Config) {
		c.Git.Strategy, c.Git.GitHubRepo, c.Git.GitHubAPI = "pr", "acme/tools", srv.URL
	})
	before := upstreamTree(t, bare, "main")
	out := write(t, rt, "tools/x.ts", "/** X. */\nexport default function (): number { return 1; }\n")
	var w struct {
		Branch string `json:"branch"`
		PRURL  string `json:"pr_url"`
	}
	_ = json.Unmarshal(out, &w)
	if !strings.HasPrefix(w.Branch, "feat/x-") || w.PRURL != "https://github.example/acme/tools/pull/7" {
		t.Fatalf("write_file = %s", out)
	}
	if _, ok := upstreamTree(t, bare, w.Branch)["tools/x.ts"]; !ok {
		t.Fatalf("the review branch %s lacks the tool", w.Branch)
	}
	if after := upstreamTree(t, bare, "main"); len(after) != len(before) {
		t.Fatal("gatekeeper mode changed main")
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Path != "/repos/acme/tools/pulls" || got.Head != w.Branch || got.Base != "main" || !strings.Contains(got.Title, "tools/x.ts") || got.Auth != "Bearer s3cret" {
		t.Fatalf("pull request = %+v", got)
	}
}

// Two nodes write the same tool differently: the later gets a clear error
// naming the branch that keeps its version; main keeps the first; nothing
// is lost.
func TestSameToolConflict(t *testing.T) {
	bare := upstream(t)
	a, _ := gitRoot(t, bare)
	b, dirB := gitRoot(t, bare)
	write(t, a, "tools/shared.ts", "/** A's version. */\nexport default function (): number { return 1; }\n")
	args, _ := json.Marshal(map[string]string{"path": "tools/shared.ts", "content": "/** B's version. */\nexport default function (): number { return 2; }\n"})
	_, err := b.Call(context.Background(), "write_file", args)
	if !errors.Is(err, repo.ErrConflict) {
		t.Fatalf("the later writer: %v, want ErrConflict", err)
	}
	var ce *repo.ConflictError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Branch, "conflict/") || !strings.Contains(err.Error(), ce.Branch) {
		t.Fatalf("the error must name the branch keeping B's version: %v", err)
	}
	if got := upstreamTree(t, bare, ce.Branch)["tools/shared.ts"]; !strings.Contains(got, "B's version") {
		t.Fatalf("branch %s has %q", ce.Branch, got)
	}
	if got := upstreamTree(t, bare, "main")["tools/shared.ts"]; !strings.Contains(got, "A's version") {
		t.Fatalf("main has %q", got)
	}
	// B's working tree follows upstream again.
	if got, _ := os.ReadFile(filepath.Join(dirB, "tools/shared.ts")); !strings.Contains(string(got), "A's version") {
		t.Fatalf("B's tree has %q", got)
	}
}

// patch_file persists like write_file.
func TestPatchPersists(t *testing.T) {
	bare := upstream(t)
	rt, _ := gitRoot(t, bare)
	write(t, rt, samples.FibPath, samples.FibTool)
	if _, err := rt.Call(context.Background(), "patch_file", json.RawMessage(`{"path":"tools/math/fib.ts","search":"Returns the n-th","replace":"Computes the n-th"}`)); err != nil {
		t.Fatal(err)
	}
	if got := upstreamTree(t, bare, "main")[samples.FibPath]; !strings.Contains(got, "Computes the n-th") {
		t.Fatalf("upstream after the patch: %q", got)
	}
	if msgs := history(t, bare); !strings.Contains(msgs[0], "patch tools/math/fib.ts") {
		t.Fatalf("last commit %q", msgs[0])
	}
	if tool, _ := rt.Registry().Get(samples.FibPath); tool.Version != 2 || !strings.Contains(tool.Description, "Computes") {
		t.Fatalf("registry after the patch: %+v", tool)
	}
}

// A corrupt meta.json never stops a runtime: it is rebuilt from the tools.
func TestCorruptRegistryRebuilt(t *testing.T) {
	bare := upstream(t)
	rt, dir := gitRoot(t, bare)
	write(t, rt, samples.FibPath, samples.FibTool)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, filepath.FromSlash(registry.ShardFile(host.RegistryFile, samples.FibPath)))
	if err := os.WriteFile(shard, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := host.LoadConfig(dir)
	cfg.Root, cfg.Isolation = dir, "inprocess"
	rt2 := start(t, cfg)
	if tool, ok := rt2.Registry().Get(samples.FibPath); !ok || !strings.Contains(tool.Description, "Fibonacci") {
		t.Fatalf("after the rebuild: %+v %v", tool, ok)
	}
	b, _ := os.ReadFile(shard)
	if !json.Valid(b) {
		t.Fatalf("the registry shard still corrupt: %q", b)
	}
}
