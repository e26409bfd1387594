package kerneltools_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/kerneltools"
)

// A link inside the tools directory that leads out of a process's scope:
// every kernel tool checks the right on where the path leads, never on the
// path as written (issue 10 items 3 and 4).
func TestKernelToolsCheckTheResolvedPath(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	root := n.root
	for name, content := range map[string]string{
		"tools/pub/a.ts":  "/** A. */\nexport default function (): string { return \"pub\"; }\n",
		"tools/priv/b.ts": "/** B. */\nexport default function (): string { return \"PRIV-RAN\"; }\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"tools/pub/b.ts": "../priv/b.ts", "tools/pub/privdir": "../priv", "tools/pub/alias.ts": "a.ts"} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	pub := []capability.Grant{{Right: capability.Read, Scope: "tools/pub/"}, {Right: capability.Write, Scope: "tools/pub/"}, {Right: capability.Exec, Scope: "tools/pub/"}}
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: pub})
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"tools/pub/b.ts"}`},
		{"read_file", `{"path":"tools/pub/privdir/b.ts"}`},
		{"check_tool", `{"path":"tools/pub/b.ts"}`},
		{"list_files", `{"dir":"tools/pub/privdir"}`},
		{"write_file", `{"path":"tools/pub/b.ts","content":"pwned"}`},
		{"patch_file", `{"path":"tools/pub/b.ts","search":"PRIV","replace":"PWND"}`},
		{"exec_tool", `{"path":"tools/pub/b.ts"}`},
	} {
		out, err := call(t, n, p, c.tool, c.args)
		if !errors.Is(err, capability.ErrDenied) {
			t.Errorf("%s %s: %.120s, %v; want capability.ErrDenied", c.tool, c.args, out, err)
			continue
		}
		if !strings.Contains(err.Error(), "resolves (through a symbolic link) to tools/priv") {
			t.Errorf("%s: the refusal does not say where the link leads: %v", c.tool, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "tools", "priv", "b.ts")); strings.Contains(string(b), "pwned") || strings.Contains(string(b), "PWND") {
		t.Errorf("tools/priv/b.ts was written through a link: %q", b)
	}
	// The links that stay in scope work; a listing shows only links the
	// process may read where they lead.
	var content string
	_ = json.Unmarshal(mustCall(t, n, p, "read_file", `{"path":"tools/pub/alias.ts"}`), &content)
	if !strings.Contains(content, `"pub"`) {
		t.Errorf("read through an in-scope link: %q", content)
	}
	if got := string(mustCall(t, n, p, "list_files", `{"dir":"tools/pub"}`)); got != `["tools/pub/a.ts","tools/pub/alias.ts"]` {
		t.Errorf("list_files tools/pub = %s; want a.ts and alias.ts only", got)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(mustCall(t, n, p, "exec_tool", `{"path":"tools/pub/alias.ts"}`), &res); err != nil || string(res.Result.Result) != `"pub"` {
		t.Errorf("exec_tool through an in-scope link: %+v %v", res, err)
	}
}
