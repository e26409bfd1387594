package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/testutil"
	"github.com/agentos-run/agentos/kerneltools"
)

func start(t *testing.T, cfg host.Config) *host.Runtime {
	t.Helper()
	cfg.Logger = quiet
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt
}

func TestStartToolsClose(t *testing.T) {
	for _, iso := range []string{"inprocess", "process"} {
		t.Run(iso, func(t *testing.T) {
			root := t.TempDir()
			rt := start(t, host.Config{Root: root, Isolation: iso})
			tools, err := rt.Tools()
			if err != nil || len(tools) != len(kerneltools.ToolNames()) {
				t.Fatalf("Tools = %d tools, %v", len(tools), err)
			}
			writeFib(t, rt)
			out, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/math/fib.ts","args":{"n":10}}`))
			if err != nil {
				t.Fatal(err)
			}
			var res kerneltools.ExecResult
			if err := json.Unmarshal(out, &res); err != nil || string(res.Result.Result) != "55" || res.RunID == "" {
				t.Fatalf("exec_tool = %s (%v)", out, err)
			}
			if meta, err := rt.Journal().Get(res.RunID); err != nil || meta.Tool != samples.FibPath {
				t.Fatalf("journaled run: %+v %v", meta, err)
			}
			// The default process cannot write outside the tools directory.
			_, err = rt.Call(context.Background(), "write_file", json.RawMessage(`{"path":"agentos.json","content":"{}"}`))
			if !errors.Is(err, capability.ErrDenied) {
				t.Fatalf("write outside tools/: %v", err)
			}
			ps := rt.Kernel().PS()
			if len(ps) != 1 || ps[0].Name != "agent" || ps[0].Calls != 2 || ps[0].Status != kernel.Waiting {
				t.Fatalf("ps = %+v", ps)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := rt.Call(context.Background(), "list_files", json.RawMessage(`{"dir":"tools"}`)); !errors.Is(err, kernel.ErrExited) {
				t.Fatalf("call after Close: %v", err)
			}
			if _, err := os.Stat(filepath.Join(root, ".agentos", "journal.db")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Close cancels a running tool and leaves its run resumable; the next Start
// resumes it.
func TestCloseLeavesRunsResumable(t *testing.T) {
	root := t.TempDir()
	rt, err := host.Start(context.Background(), host.Config{Root: root, Logger: quiet, Limits: host.LimitsConfig{Timeout: host.Duration(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	// The tool spins until /tmp/go exists... which Close never lets happen:
	// it spins until cancelled. After restart the file is there, so the
	// resumed run finishes.
	src := `export default async function () { await tgp.list_files("tools"); while (true) { const f = await tgp.list_files("tools"); if (f.includes("tools/go.txt")) return "resumed"; } }`
	args, _ := json.Marshal(map[string]string{"path": "tools/wait.ts", "content": src})
	if _, err := rt.Call(context.Background(), "write_file", args); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rt.Call(context.Background(), "exec_tool", json.RawMessage(`{"path":"tools/wait.ts"}`))
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the run to be journaled as unfinished", func() bool { runs, _ := rt.Journal().Unfinished(); return len(runs) == 1 })
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := os.WriteFile(filepath.Join(root, "tools", "go.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rt2 := start(t, host.Config{Root: root})
	rec := rt2.Recovered()
	if len(rec) != 1 || !rec[0].Resumed {
		t.Fatalf("recovered = %+v", rec)
	}
	t.Logf("resumed run: %s", rec[0].Result.Result)
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, cfg := range []host.Config{
		{Quota: map[string]float64{"tokens": 5}},
		{Agent: host.AgentConfig{Grants: []capability.Grant{{Right: "root"}}}},
		{Isolation: "vm"},
	} {
		cfg.Root = t.TempDir()
		if _, err := host.Start(context.Background(), cfg); err == nil {
			t.Errorf("Start(%+v) succeeded", cfg)
		} else {
			t.Log(err)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	rt := start(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", MetricsAddr: "127.0.0.1:0"})
	writeFib(t, rt)
	resp, err := http.Get(rt.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	// The exporter labels every series with its scope's name, version and
	// schema URL (the last two empty for agentos' scopes).
	for _, want := range []string{`agentos_kernel_calls_total{otel_scope_name="github.com/agentos-run/agentos/actors/kernel",otel_scope_schema_url="",otel_scope_version="",outcome="ok",tool="write_file"} 1`, "agentos_kernel_processes"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

// Start a runtime, hand its kernel tools to a model, call one.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(dir)
	rt, err := host.Start(context.Background(), host.Config{Root: dir, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	tools, _ := rt.Tools("write_file", "exec_tool")
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	args, _ := json.Marshal(map[string]string{"path": "tools/hello.ts", "content": "/** Greets. */\nexport default function (a: { name: string }): string { return `hello ${a.name}`; }\n"})
	_, _ = tools[0].Call(context.Background(), args)
	out, _ := tools[1].Call(context.Background(), json.RawMessage(`{"path":"tools/hello.ts","args":{"name":"ada"}}`))
	var res kerneltools.ExecResult
	_ = json.Unmarshal(out, &res)
	fmt.Println(res.Success, string(res.Result.Result))
	// Output:
	// write_file
	// exec_tool
	// true "hello ada"
}
