package kerneltools_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
)

// The kernel tools run only for a process of the node's own kernel: a
// proc.Process handle of another kernel (agent and mcpserver hold handles,
// not *kernel.Process) is refused before anything is charged or read.
func TestToolsRefuseAHandleOfAnotherKernel(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	other := newKernel(t, kernel.Options{Logger: quiet})
	stranger := spawn(t, other, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}})
	if _, err := call(t, n, stranger, "list_files", `{"dir":"tools"}`); !errors.Is(err, kernel.ErrInvalid) || !strings.Contains(err.Error(), "this node's kernel") {
		t.Fatalf("Call with another kernel's process: %v, want ErrInvalid naming the node's kernel", err)
	}
	if _, err := n.Tools(stranger); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("Tools for another kernel's process: %v, want ErrInvalid", err)
	}
	if _, err := n.ApprovalAsk(stranger, "tools/x.ts"); !errors.Is(err, kernel.ErrInvalid) {
		t.Fatalf("ApprovalAsk for another kernel's process: %v, want ErrInvalid", err)
	}
	own := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}})
	if _, err := call(t, n, own, "list_files", `{"dir":"tools"}`); err != nil {
		t.Fatalf("Call with the node's own process: %v", err)
	}
	if u := stranger.Account().Used(capability.ToolCalls); u != 0 {
		t.Fatalf("the refused handle was charged %v tool calls", u)
	}
}
