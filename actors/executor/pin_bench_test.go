package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/journal"
)

// BenchmarkRecordRequires records a run of a tool that requires three
// library modules (in-process, GroupCommit journal): what journaling each
// run's modules (pinning) costs a recorded run.
func BenchmarkRecordRequires(b *testing.B) {
	files := map[string]string{
		"tools/t.ts":     "const a = require('/lib/lib/a');\nconst b = require('/lib/lib/b');\nconst c = require('./lib/c');\nexport default (args: { n: number }) => a.f(args.n) + b.f(args.n) + c.f(args.n);\n",
		"tools/lib/a.ts": "export function f(n: number) { return n + 1; }\n",
		"tools/lib/b.ts": "export function f(n: number) { return n * 2; }\n",
		"tools/lib/c.ts": "export function f(n: number) { return n - 3; }\n",
	}
	e := newExec(b, IsolationInProcess, files, func(o *Options) { o.Workers = 1 })
	j, err := journal.Open(filepath.Join(b.TempDir(), "j.db"), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	req := Request{Path: "tools/t.ts", Args: json.RawMessage(`{"n": 10}`)}
	if r, _, err := Record(context.Background(), e, j, req); err != nil || !r.Success || string(r.Result) != "38" {
		b.Fatalf("%+v %v", r, err)
	}
	for b.Loop() {
		if r, _, err := Record(context.Background(), e, j, req); err != nil || !r.Success {
			b.Fatal(r.Error, err)
		}
	}
}
