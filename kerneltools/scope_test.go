package kerneltools_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
)

// authorize (tools.go) skips vfs.Clean for any path that ends in "/", so the
// capability check runs on the raw "tools/../agentos.json/" (which a "tools/"
// scope covers by prefix) while the jail cleans it to "agentos.json".
func TestTrailingSlashStaysInScope(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	k := n.Kernel()
	admin := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read}, {Right: capability.Write}}})
	// The operator's policy (no kernel tool writes it, git.Protected).
	if err := os.WriteFile(filepath.Join(n.root, "agentos.json"), []byte(`{"secret":1}`), 0o644); err != nil {
		t.Fatal(err)
	}

	agent := spawn(t, k, block, kernel.SpawnOptions{Grants: agentGrants}) // read/write/exec on tools/ only
	for _, path := range []string{"tools/../agentos.json", "tools/../agentos.json/"} {
		if out, err := call(t, n, agent, "read_file", `{"path":"`+path+`"}`); !errors.Is(err, capability.ErrDenied) {
			t.Errorf("read_file %q with read on tools/: got %s, %v; want capability.ErrDenied", path, out, err)
		}
	}
	if out, err := call(t, n, agent, "write_file", `{"path":"tools/../agentos.json/","content":"pwned"}`); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("write_file tools/../agentos.json/ with write on tools/: got %s, %v; want capability.ErrDenied", out, err)
	}
	var content string
	_ = json.Unmarshal(mustCall(t, n, admin, "read_file", `{"path":"agentos.json"}`), &content)
	if content != `{"secret":1}` {
		t.Errorf("agentos.json was overwritten through a tools/ grant: %q", content)
	}
}
