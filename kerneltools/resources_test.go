package kerneltools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/kerneltools"
)

// Issue 10, item 8: a refused call cost nothing, so a flood of refusals
// never reached the caller's quota. Every call is charged one tool call,
// refused or not: with tool_calls 5, five refused reads use the quota up and
// the sixth call ends the process with quota:tool_calls.
func TestRefusedCallsAreCharged(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{
		Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}},
		Quota:  capability.Limits{capability.ToolCalls: 5},
	})
	refusals := []struct{ tool, args string }{
		{"read_file", `{"path":"secret.txt"}`},               // no right
		{"write_file", `{"path":"tools/a.ts","content":""}`}, // no right
		{"read_file", `{"nope":1}`},                          // bad arguments
		{"format_disk", `{}`},                                // no such tool
		{"read_file", `{"path":"../etc/passwd"}`},            // bad path
	}
	for _, r := range refusals {
		if _, err := call(t, n, p, r.tool, r.args); err == nil {
			t.Fatalf("%s %s succeeded", r.tool, r.args)
		}
	}
	if used := p.Account().Used(capability.ToolCalls); used != 5 {
		t.Fatalf("5 refused calls charged %g tool calls, want 5", used)
	}
	_, err := call(t, n, p, "read_file", `{"path":"secret.txt"}`)
	var qe *capability.QuotaError
	if !errors.As(err, &qe) || qe.Meter != capability.ToolCalls {
		t.Fatalf("6th call after 5 refusals: %v, want the tool_calls quota", err)
	}
	if r := wait(t, p); r.String() != "quota:tool_calls" {
		t.Fatalf("the refused caller ended with %v, want quota:tool_calls", r)
	}
}

// Issue 10, item 8: kernel tool arguments had no size limit (a 60 MB
// argument was decoded, copied and echoed). Arguments over
// Options.MaxArgsBytes are refused before decoding with an error that
// names the limit and how to raise it, and quotes none of the value.
func TestLargeArgumentsRefused(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{}, func(o *host.NodeOptions) { o.MaxArgsBytes = 64 << 10 })
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	big := strings.Repeat("x", 128<<10)
	_, err := call(t, n, p, "write_file", `{"path":"tools/big.ts","content":"`+big+`"}`)
	if !errors.Is(err, kerneltools.ErrArgsTooLarge) || !errors.Is(err, kerneltool.ErrInvalidArgs) {
		t.Fatalf("128 KiB of arguments over a 64 KiB limit: %.300v", err)
	}
	if msg := err.Error(); len(msg) > 1024 || !strings.Contains(msg, "65536") || !strings.Contains(msg, "max_args_bytes") {
		t.Fatalf("the error must name the limit and the setting, briefly: %d bytes: %.400s", len(msg), msg)
	}
	mustCall(t, n, p, "write_file", `{"path":"tools/small.ts","content":"`+strings.Repeat("x", 32<<10)+`"}`)

	// The default limit applies when none is configured.
	d := boot(t, executor.IsolationInProcess, kernel.Options{})
	q := spawn(t, d.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	huge := `{"path":"tools/big.ts","content":"` + strings.Repeat("x", kerneltools.DefaultMaxArgsBytes) + `"}`
	if _, err := call(t, d, q, "write_file", huge); !errors.Is(err, kerneltools.ErrArgsTooLarge) {
		t.Fatalf("arguments over the default limit: %.300v", err)
	}
}

// Issue 10, item 8: an error echoed a 60 MB path back. A path longer than
// node.MaxPathBytes is refused with an error that says so and quotes a
// short prefix only; other long values (an unknown parameter's name, an
// unknown tool's name) are clipped in errors too.
func TestLongValuesNotEchoed(t *testing.T) {
	n := boot(t, executor.IsolationInProcess, kernel.Options{})
	p := spawn(t, n.Kernel(), block, kernel.SpawnOptions{Grants: agentGrants})
	long := strings.Repeat("a", 512<<10)
	cases := []struct {
		tool, args string
		is         error
	}{
		{"read_file", `{"path":"tools/` + long + `"}`, kerneltool.ErrInvalidArgs},
		{"read_file", `{"path":"secret/` + long + `"}`, kerneltool.ErrInvalidArgs},
		{"list_files", `{"dir":"` + long + `"}`, kerneltool.ErrInvalidArgs},
		{"read_file", `{"path":"tools/a.ts","` + long + `":1}`, kerneltool.ErrInvalidArgs},
		{"exec_sql", `{"sql":"SELECT 1","` + long + `":1}`, kerneltool.ErrInvalidArgs},
		{"read_" + long, `{}`, kerneltool.ErrUnknownTool},
	}
	for i, c := range cases {
		_, err := call(t, n, p, c.tool, c.args)
		if !errors.Is(err, c.is) {
			t.Errorf("case %d: %.300v, want %v", i, err, c.is)
			continue
		}
		if len(err.Error()) > 2048 {
			t.Errorf("case %d: the error is %d bytes long (it echoes the value): %.300s", i, len(err.Error()), err)
		}
		if i < 3 && !strings.Contains(err.Error(), fmt.Sprint(kerneltools.MaxPathBytes)) {
			t.Errorf("case %d: the error does not name the path limit: %.300s", i, err)
		}
	}
}

// Issue 10, item 8: the event ring kept each refused path whole (12 refused
// calls of 32 MB, and /v1/events answered 1.13 GB). Every event field a
// caller chose is clipped before it is kept: a refused resource, a fault's
// error, a process name.
func TestEventsClipLongValues(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	long := strings.Repeat("z", 1<<20)
	p := spawn(t, k, block, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/"}}})
	for range 8 {
		err := p.Check(capability.Read, "secret/"+long)
		if !errors.Is(err, capability.ErrDenied) {
			t.Fatalf("check: %.200v", err)
		}
		if len(err.Error()) > 2048 {
			t.Fatalf("the refusal echoes the resource: %d bytes", len(err.Error()))
		}
	}
	f := spawn(t, k, func(context.Context, *kernel.Process) error { return errors.New("boom " + long) }, kernel.SpawnOptions{Name: "n" + long})
	wait(t, f)
	total := 0
	for _, e := range k.Events(0, 0) {
		total += len(e.Detail) + len(e.Reason) + len(e.Name)
	}
	if total > 16<<10 {
		t.Fatalf("the kept events hold %d bytes of caller values (want them clipped)", total)
	}
}
