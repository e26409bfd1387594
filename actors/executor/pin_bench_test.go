package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/internal/benchutil"
	"github.com/agentos-run/agentos/journal"
)

// BenchmarkRecordRequires records a run of a tool that requires three
// library modules (in-process; GroupCommit, and NoSync, where no fsync
// hides the CPU): what journaling each run's modules (pinning) costs a
// recorded run. cpu-ns/op is this process's CPU time per run.
func BenchmarkRecordRequires(b *testing.B) {
	for _, d := range []journal.Durability{journal.GroupCommit, journal.NoSync} {
		b.Run(d.String(), func(b *testing.B) { benchRecordRequires(b, d) })
	}
}

func benchRecordRequires(b *testing.B, d journal.Durability) {
	files := map[string]string{
		"tools/t.ts":     "const a = require('/lib/lib/a');\nconst b = require('/lib/lib/b');\nconst c = require('./lib/c');\nexport default (args: { n: number }) => a.f(args.n) + b.f(args.n) + c.f(args.n);\n",
		"tools/lib/a.ts": "export function f(n: number) { return n + 1; }\n",
		"tools/lib/b.ts": "export function f(n: number) { return n * 2; }\n",
		"tools/lib/c.ts": "export function f(n: number) { return n - 3; }\n",
	}
	e := newExec(b, IsolationInProcess, files, func(o *Options) { o.Workers = 1 })
	j, err := journal.Open(filepath.Join(b.TempDir(), "j.db"), journal.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	req := Request{Path: "tools/t.ts", Args: json.RawMessage(`{"n": 10}`)}
	if r, _, err := Record(context.Background(), e, j, req); err != nil || !r.Success || string(r.Result) != "38" {
		b.Fatalf("%+v %v", r, err)
	}
	cpu := benchutil.CPUTime()
	defer benchutil.ReportCPU(b, cpu)
	for b.Loop() {
		if r, _, err := Record(context.Background(), e, j, req); err != nil || !r.Success {
			b.Fatal(r.Error, err)
		}
	}
}
