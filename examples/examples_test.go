package examples_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// expected lists, for every example, lines its output MUST contain (the
// last is its final "OK: ..." line). An example directory missing here fails
// TestExamples, so a new example gets its checks.
var expected = map[string][]string{
	"governance-gate": {
		`different: 20 -> 30`,
		`the working tree and the registry still hold the buggy version`,
		`: different (old 5, new 6)`,
		`3 same, 0 different, 0 divergent, 0 error(s)`,
		"OK: the fix was refused under block, the rewording kept every result and landed",
	},
	"runtime-two-agents": {
		`runner  write_file tools/greet.ts: refused: write_file: capability does not grant this right`,
		`lacks the "write" right on "tools/greet.ts"`,
		`runner  exec_tool  tools/greet.ts: ok, result "hello ada"`,
		"OK: the runner was refused a write and allowed an exec",
	},
	"replay-debug-patched": {
		`(wrong: the prices were concatenated)`,
		`replay (recorded source): result "01.502.25", same as recorded: true`,
		`replay (patched source):  result 3.75, patched: true, same as recorded: false, divergence: none`,
		`replay (chatty patch):    divergence [AGENTOS-J002]`,
		"OK: recorded once, replayed offline three times",
	},
	"forge-scripted-model": {
		`attempt 1: tests failed`,
		`attempt 2: check and tests passed`,
		`exec_tool tools/text/slug.ts -> "actors-that-really-exchange-messages"`,
		`reused tools/text/slug.ts`,
		`the model was asked 2 times in all`,
		"OK: forged on the second attempt, ran, reused",
	},
	"cluster-three-nodes": {
		`the model was asked 1 time(s)`,
		`node3 exec_tool tools/text/reverse.ts -> "memory tool one share nodes"`,
		`cluster status: 3 members, 1 of them holds the spec's forge`,
		"OK: one forge for two callers, the tool on every node",
	},
	"mcp-tools-as-code": {
		`list_files /mcp          -> ["/mcp/tracker/"]`,
		`search_tools             -> /mcp/tracker/create_issue.ts`,
		`export default async function createIssue(input: CreateIssueInput): Promise<CreateIssueOutput> {`,
		`exec_tool tools/triage.ts -> "filed #1 (https://tracker.example/issues/1); mcp_tool_error: tracker/close_issue: no issue #101"`,
		`same as recorded: true`,
		"OK: MCP tools called as code, discovered as files, replayed offline",
	},
	"mcp-pii": {
		`the model was asked 4 times; no request held a real value`,
		`the CRM (in restore_to) received:   {"name":"Ada Lovelace","email":"ada@example.com","phone":"+44 20 7946 0958"}`,
		`the journal (`,
		`replayed 3 tool runs without the token map: all the same as recorded`,
		"OK: the model moved the data without reading it; only the CRM got the real values",
	},
	"mcp-serve": {
		`notifications/tools/list_changed received`,
		`finance_interest -> structuredContent {"amount":1628.89}`,
		`read_file tools/missing.ts -> isError: not_found:`,
		"OK: listed, written, announced, called, failed as isError",
	},
	"agents-memory": {
		`run 1: recall brought the first turn's fact back into context: true`,
		`run 1: answer "The launch code is 7-4-1-9."; lessons distilled: 2`,
		`run 2 (after a restart): lessons in the system prompt: true`,
		`run 2 (after a restart): recall found last run's page: true`,
		`intern: recall of analyst's memory: lacks the "memory_read" right on "analyst"`,
		"OK: paged four windows, recalled the first turn, remembered across a restart, refused a reader without the right",
	},
	"supervision-quotas": {
		`restart warmup (restart 2)`,
		`the supervisor is still alive`,
		`escalate feed (restart 3)`,
		`the supervisor ended: fault: supervisor: 3 restarts within 1m0s`,
		`the process ended: quota:tool_calls`,
		"OK: restarted within intensity, escalated beyond it, ended on quota",
	},
	"governance-approval": {
		`search_tools does not offer it yet`,
		`approved by reviewer:ada -> the run returns 42`,
		`approval_denied: tools/double.ts`,
		`was denied by reviewer:ada: it triples`,
		`approval_timeout: tools/double.ts`,
		"OK: nothing high-risk ran unapproved; the approved version ran",
	},
}

// examples returns the example directories: those holding a main.go.
func examples(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) < 4 {
		t.Fatalf("found %d examples (%v), want at least 4", len(names), names)
	}
	return names
}

// TestExamplesDocumented: every example has its checks here, a README.md
// showing `go run ./examples/<name>` and its final OK line (so the pasted
// output cannot silently stop matching what the program prints), and a
// line in examples/README.md.
func TestExamplesDocumented(t *testing.T) {
	index, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range examples(t) {
		want, ok := expected[name]
		if !ok {
			t.Errorf("examples/%s has no entry in expected (examples_test.go): add the lines its output must contain", name)
			continue
		}
		readme, err := os.ReadFile(filepath.Join(name, "README.md"))
		if err != nil {
			t.Errorf("examples/%s has no README.md: %v", name, err)
			continue
		}
		for _, s := range []string{"go run ./examples/" + name, want[len(want)-1]} {
			if !bytes.Contains(readme, []byte(s)) {
				t.Errorf("examples/%s/README.md lacks %q", name, s)
			}
		}
		if !bytes.Contains(index, []byte("("+name+"/)")) {
			t.Errorf("examples/README.md does not link %s/", name)
		}
	}
}

// TestExamples builds every example and runs it: each MUST exit 0 and print
// its expected lines. The examples exit 1 when what they demonstrate does
// not happen, so this catches drift in the API and in the behaviour.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every example (tens of seconds): not in -short mode")
	}
	// go test puts its own GOROOT/bin first on PATH: this is the go
	// command running the tests.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the examples with: %v", err)
	}
	names := examples(t)
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin+string(filepath.Separator), "./...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, name))
			cmd.Dir = t.TempDir()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
			}
			for _, want := range expected[name] {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("%s's output lacks %q:\n%s", name, want, stdout.String())
				}
			}
		})
	}
}
