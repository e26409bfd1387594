package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExec(t *testing.T) {
	root := toolRoot(t, map[string]string{
		"tools/math/fib.ts": fibSrc,
		"tools/boom.ts":     "export default () => { tgp.log('about to fail'); throw new Error('boom'); };\n",
		"tools/freeze.ts":   "export default () => { for (;;) {} };\n",
	})
	code, stdout, stderr := cli(t, "exec", "--root", root, "tools/math/fib.ts", `{"n": 10}`)
	if code != 0 || strings.TrimSpace(stdout) != "55" {
		t.Fatalf("fib: %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "exec", "--root", root, "--json", "tools/boom.ts")
	var res struct {
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
		Logs    []string        `json:"logs"`
		Error   *struct{ Kind, Message, Stack string }
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("--json did not print exactly one object: %v %q", err, stdout)
	}
	if code != 1 || res.Success || res.Error == nil || res.Error.Kind != "exception" || res.Error.Message != "Error: boom" || len(res.Logs) != 1 {
		t.Fatalf("failing tool: exit %d %+v", code, res)
	}
	code, _, stderr = cli(t, "exec", "--root", root, "--timeout", "100ms", "tools/freeze.ts")
	if code != 1 || !strings.Contains(stderr, "error (timeout)") {
		t.Fatalf("freeze: %d %q", code, stderr)
	}
	code, stdout, _ = cli(t, "exec", "--root", root, "--inprocess", "tools/math/fib.ts", `{"n": 20}`)
	if code != 0 || strings.TrimSpace(stdout) != "6765" {
		t.Fatalf("in-process: %d %q", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--root", root, "tools/math/fib.ts", `{"n":`}, "ARGS_JSON must be a JSON object"},
		{[]string{"exec", "--root", root, "tools/math/fib.ts", `[1]`}, "ARGS_JSON must be a JSON object"},
		{[]string{"exec", "--root", root, "tools/none.ts"}, "no file tools/none.ts"},
		{[]string{"exec", "--root", root, "/etc/hostname"}, "outside the tool root"},
		{[]string{"exec", "--root", root}, "expected PATH"},
		{[]string{"exec", "--timeout", "soon", "x.ts"}, `invalid value "soon"`},
	} {
		code, stdout, stderr := cli(t, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d stdout %q stderr %q, want exit 2 and one line containing %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// Issue 25 item 12: 'exec --no-journal /abs/path.ts' (and 'check') work
// outside a tool root, as the README says, whatever the current directory:
// the file runs from its own directory, not only when it lies under the
// current one.
func TestExecNoJournalAbsolutePathOutsideARoot(t *testing.T) {
	elsewhere := t.TempDir()
	tool := filepath.Join(elsewhere, "answer.ts")
	if err := os.WriteFile(tool, []byte("/** The answer. */\nexport default function (): string { return 'yes'; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // not a tool root, and not above the tool
	if code, stdout, stderr := cli(t, "exec", "--no-journal", tool); code != 0 || !strings.Contains(stdout, "yes") {
		t.Fatalf("exec --no-journal %s outside a root: %d %q %q", tool, code, stdout, stderr)
	}
	if code, stdout, stderr := cli(t, "check", tool); code != 0 || !strings.Contains(stdout, "answer.ts") {
		t.Fatalf("check %s outside a root: %d %q %q", tool, code, stdout, stderr)
	}
}
