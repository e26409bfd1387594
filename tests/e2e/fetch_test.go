package e2e_test

import (
	"context"
	"encoding/json"
	"github.com/agentos-run/agentos/actors/executor"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

const fetchTool = `/** Reads a price from the pricing API. */
export default async function (a: { url: string }): Promise<string> {
  const r = await tgp.fetch(a.url, { headers: { Accept: "text/plain" } });
  return r.status + " " + r.body;
}
`

// tgp.fetch reaches allowed URLs only, needs the fetch right, and is
// journaled: the run replays offline with the server gone.
func TestFetchThroughTheKernel(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("42.50"))
	}))
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", Fetch: host.FetchConfig{Allow: []string{srv.URL + "/prices/"}}})
	write(t, rt, "tools/price.ts", fetchTool)
	exec := func(p *kernel.Process, url string) kerneltools.ExecResult {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"path": "tools/price.ts", "args": map[string]string{"url": url}})
		out, err := rt.Node().Call(context.Background(), p, "exec_tool", args)
		if err != nil {
			t.Fatal(err)
		}
		var res kerneltools.ExecResult
		_ = json.Unmarshal(out, &res)
		return res
	}
	res := exec(rt.Agent(), srv.URL+"/prices/ada")
	if !res.Success || string(res.Result.Result) != `"200 42.50"` {
		t.Fatalf("allowed fetch: %+v", res)
	}
	if res := exec(rt.Agent(), srv.URL+"/admin"); res.Success || !strings.Contains(res.Error.Message, "outside the allowed prefixes") {
		t.Fatalf("fetch outside the allow-list: %+v", res.Result)
	}
	noFetch, err := rt.Kernel().Spawn(func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Exec, Scope: "tools/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res := exec(noFetch, srv.URL+"/prices/ada"); res.Success || !strings.Contains(res.Error.Message, `lacks the "fetch" right`) {
		t.Fatalf("fetch without the right: %+v", res.Error)
	}
	if hits.Load() != 1 {
		t.Fatalf("the server saw %d requests, want 1 (refused calls never leave)", hits.Load())
	}
	srv.Close()
	rep, err := executor.Replay(context.Background(), rt.Executor(), rt.Journal(), res.RunID, nil)
	if err != nil || !rep.Same || string(rep.Result.Result) != `"200 42.50"` {
		t.Fatalf("offline replay: %+v %v", rep, err)
	}
}
