package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/journal"
)

const loggingTool = `/** Says hello, and logs it. */
export default function (args: { name: string }) {
  console.log('greeting', args.name);
  return 'hello ' + args.name;
}
`

// agentos trace shows a run's journaled logs and OpenTelemetry trace id;
// agentos runs --json names the trace id and leaves the logs to trace.
func TestTraceShowsLogsAndTraceID(t *testing.T) {
	root := toolRoot(t, map[string]string{"tools/hello.ts": loggingTool})
	code, stdout, stderr := cli(t, "exec", "--root", root, "--json", "tools/hello.ts", `{"name": "ada"}`)
	var res struct {
		Run string `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || res.Run == "" {
		t.Fatalf("exec: %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "trace", "--root", root, res.Run)
	if code != 0 || !strings.Contains(stdout, "logs (1 line)") || !strings.Contains(stdout, "| greeting ada") {
		t.Fatalf("trace of a run that logged: %d %q", code, stdout)
	}
	if !strings.Contains(stdout, "trace id none") {
		t.Fatalf("trace of a run recorded with tracing off must say it has no trace id: %q", stdout)
	}

	// A traced run, as a node with a collector journals it.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	j, err := journal.Open(filepath.Join(root, ".agentos", "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := j.Begin(journal.RunMeta{Kind: "exec", Tool: "tools/hello.ts", TraceID: traceID})
	if err != nil {
		t.Fatal(err)
	}
	run.SetLogs([]string{"one", "two"})
	if err := run.End(journal.StatusOK, json.RawMessage(`"hello"`), nil); err != nil {
		t.Fatal(err)
	}
	id := run.ID()
	j.Close()
	code, stdout, _ = cli(t, "trace", "--root", root, id)
	if code != 0 || !strings.Contains(stdout, "trace id "+traceID) || !strings.Contains(stdout, "logs (2 lines)") {
		t.Fatalf("trace of a traced run: %d %q", code, stdout)
	}
	code, stdout, _ = cli(t, "runs", "--root", root, "--json")
	var out struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 0 || len(out.Runs) != 2 {
		t.Fatalf("runs --json: %d %v %q", code, err, stdout)
	}
	for _, r := range out.Runs {
		if _, ok := r["logs"]; ok {
			t.Errorf("runs --json lists a run's logs (agentos trace shows them): %v", r)
		}
		if r["id"] == id && r["trace_id"] != traceID {
			t.Errorf("runs --json: run %s has trace_id %v, want %s", id, r["trace_id"], traceID)
		}
	}
}
