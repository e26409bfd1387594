package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/mcpserver"
	"github.com/agentos-run/agentos/persona"
)

// readResource reads uri; err is the protocol error of a refused read.
func readResource(cs *mcp.ClientSession, uri string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Contents {
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// mustRefused checks that err is a refusal naming the read right.
func mustRefused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), `lacks the "read" right`) && !strings.Contains(err.Error(), "no run") {
		t.Errorf("%s: want a refusal of the read right, got %v", what, err)
	}
}

func complete(t *testing.T, cs *mcp.ClientSession, ref *mcp.CompleteReference, arg, value string, ctxArgs map[string]string) []string {
	t.Helper()
	p := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}}
	if ctxArgs != nil {
		p.Context = &mcp.CompleteContext{Arguments: ctxArgs}
	}
	res, err := cs.Complete(context.Background(), p)
	if err != nil {
		t.Fatalf("complete %s %s: %v", ref.URI+ref.Name, arg, err)
	}
	return res.Completion.Values
}

// Issue 29 item 2: resources, prompts and completions, each read checked
// against the client's token as the kernel tools are. A client holding
// read on tools/pub/ and on one persona sees and reads exactly those: a
// tool outside its scope, a version of it, another client's run, another
// persona are refused (and not listed, nor completed); every read is
// charged as a kernel call.
func TestResourcesAndPromptsUnderTheClientsRights(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	ctx := context.Background()
	secret := strings.Replace(samples.FibTool, "Returns the n-th Fibonacci number.", "Secret fibonacci.", 1)
	for path, src := range map[string]string{"tools/pub/fib.ts": samples.FibTool, "tools/priv/secret.ts": secret} {
		if _, err := e.rt.Call(ctx, "write_file", mustJSON(map[string]string{"path": path, "content": src})); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []persona.Persona{{Name: "helper", Description: "Helps.", System: "You are a careful helper."}, {Name: "hidden", System: "Internal only."}} {
		if _, err := e.rt.SavePersona(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	reader := clientProc(t, e, "reader",
		capability.Grant{Right: capability.Read, Scope: "tools/pub/"}, capability.Grant{Right: capability.Exec, Scope: "tools/"},
		capability.Grant{Right: capability.Read, Scope: "personas/helper.md"})
	cs := e.connect(t, reader, nil)
	admin := e.connect(t, e.rt.Agent(), nil)

	// A run of each tool: the reader's of pub, the default process's of priv.
	own := call(t, cs, "exec_tool", map[string]any{"path": "tools/pub/fib.ts", "args": map[string]any{"n": 10}})
	mustOK(t, "exec_tool", own)
	ownRun, _ := own.Meta["agentos/run_id"].(string)
	other := call(t, admin, "exec_tool", map[string]any{"path": "tools/priv/secret.ts", "args": map[string]any{"n": 3}})
	mustOK(t, "exec_tool", other)
	otherRun, _ := other.Meta["agentos/run_id"].(string)
	pubRun, err := e.rt.Journal().Get(ownRun)
	if err != nil {
		t.Fatalf("the reader's run %q: %v", ownRun, err)
	}
	privRun, err := e.rt.Journal().Get(otherRun)
	if err != nil {
		t.Fatal(err)
	}

	// Listed: the readable tool's source, the registry; not the other.
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, "agentos://tools/pub/fib.ts") || !slices.Contains(uris, mcpserver.URIRegistry) || slices.Contains(uris, "agentos://tools/priv/secret.ts") {
		t.Errorf("resources listed to the reader: %v", uris)
	}

	// Refused: charged as kernel calls.
	before := callsCharged(t, e, reader.Name())
	_, err = readResource(cs, "agentos://tools/priv/secret.ts")
	mustRefused(t, "the current source outside the token", err)
	_, err = readResource(cs, "agentos://tools/priv/secret.ts@"+privRun.Hash[:12])
	mustRefused(t, "a version outside the token", err)
	_, err = readResource(cs, "agentos://runs/"+otherRun)
	mustRefused(t, "another process's run", err)
	_, err = readResource(cs, "agentos://personas/hidden")
	mustRefused(t, "a persona outside the token", err)
	if got := callsCharged(t, e, reader.Name()) - before; got != 4 {
		t.Errorf("4 refused reads charged %v tool_calls, want each charged once", got)
	}
	// Not offered to this client: unknown to it.
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hidden"}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("the prompt of a persona outside the token: %v", err)
	}

	// Allowed.
	if src, err := readResource(cs, "agentos://tools/pub/fib.ts"); err != nil || src != samples.FibTool {
		t.Errorf("the readable tool's source: %q %v", src, err)
	}
	if src, err := readResource(cs, "agentos://tools/pub/fib.ts@"+pubRun.Hash[:12]); err != nil || src != samples.FibTool {
		t.Errorf("its recorded version: %q %v", src, err)
	}
	if tr, err := readResource(cs, "agentos://runs/"+ownRun); err != nil || !strings.Contains(tr, `"calls"`) || !strings.Contains(tr, "tools/pub/fib.ts") {
		t.Errorf("the reader's own run: %q %v", tr, err)
	}
	if reg, err := readResource(cs, mcpserver.URIRegistry); err != nil || !strings.Contains(reg, "tools/pub/fib.ts") || strings.Contains(reg, "priv") {
		t.Errorf("the registry as the reader sees it: %s %v", reg, err)
	}

	// Prompts: the readable persona only, with its arguments.
	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
		if len(p.Arguments) != 2 || p.Arguments[0].Name != "task" {
			t.Errorf("prompt %s arguments %+v", p.Name, p.Arguments)
		}
	}
	if !slices.Equal(prompts, []string{"helper"}) {
		t.Errorf("prompts listed to the reader: %v", prompts)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "helper", Arguments: map[string]string{"task": "Sum 2 and 3."}})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("the helper prompt: %+v %v", got, err)
	}
	if txt := got.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(txt, "careful helper") || !strings.HasSuffix(txt, "Sum 2 and 3.") {
		t.Errorf("the helper prompt's text %q", txt)
	}

	// Completions: only what the reader may read.
	if v := complete(t, cs, &mcp.CompleteReference{Type: "ref/resource", URI: "agentos://tools/{+path}"}, "path", "", nil); !slices.Equal(v, []string{"pub/fib.ts"}) {
		t.Errorf("tool paths completed for the reader: %v", v)
	}
	if v := complete(t, cs, &mcp.CompleteReference{Type: "ref/resource", URI: "agentos://tools/{+path}@{hash}"}, "hash", pubRun.Hash[:2], map[string]string{"path": "pub/fib.ts"}); !slices.Contains(v, pubRun.Hash) {
		t.Errorf("versions completed: %v, want %s", v, pubRun.Hash)
	}
	if v := complete(t, cs, &mcp.CompleteReference{Type: "ref/resource", URI: "agentos://tools/{+path}@{hash}"}, "hash", "", map[string]string{"path": "priv/secret.ts"}); len(v) != 0 {
		t.Errorf("versions of an unreadable tool completed: %v", v)
	}
	if v := complete(t, cs, &mcp.CompleteReference{Type: "ref/resource", URI: "agentos://personas/{name}"}, "name", "h", nil); !slices.Equal(v, []string{"helper"}) {
		t.Errorf("persona names completed: %v", v)
	}
	if v := complete(t, cs, &mcp.CompleteReference{Type: "ref/resource", URI: "agentos://runs/{id}"}, "id", "", nil); !slices.Equal(v, []string{ownRun}) {
		t.Errorf("run ids completed: %v, want only %s", v, ownRun)
	}
}

// callsCharged is the tool_calls the named process was charged.
func callsCharged(t *testing.T, e *env, name string) float64 {
	t.Helper()
	pid, ok := e.rt.Kernel().Lookup(name)
	if !ok {
		t.Fatalf("no process %s", name)
	}
	p := e.rt.Kernel().Process(pid)
	return p.Account().Used(capability.ToolCalls)
}

// list_changed: a new tool the client may read is listed as a resource,
// and a new persona as a prompt, with their notifications.
func TestResourcesAndPromptsListChanged(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	var resources, prompts atomic.Int32
	// Personas are read with the read right on personas/, which the
	// default grants do not hold.
	p := clientProc(t, e, "editor", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Write, Scope: "tools/"}, capability.Grant{Right: capability.Read, Scope: "personas/"})
	cs := e.connect(t, p, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resources.Add(1) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { prompts.Add(1) },
	})
	mustOK(t, "write_file", call(t, cs, "write_file", map[string]any{"path": samples.FibPath, "content": samples.FibTool}))
	if _, err := e.rt.SavePersona(context.Background(), persona.Persona{Name: "critic", System: "Be critical."}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for resources.Load() == 0 || prompts.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("list_changed: resources %d, prompts %d", resources.Load(), prompts.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if src, err := readResource(cs, "agentos://tools/math/fib.ts"); err != nil || src != samples.FibTool {
		t.Errorf("the new tool's source: %v", err)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "critic"}); err != nil {
		t.Errorf("the new persona's prompt: %v", err)
	}
}

// A persona's {{placeholders}} are its prompt's required arguments,
// substituted; a missing one is an error naming it.
func TestPersonaPromptArguments(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	if _, err := e.rt.SavePersona(context.Background(), persona.Persona{Name: "greeter", System: "Greet {{who}} in {{lang}}; {{who}} is a guest."}); err != nil {
		t.Fatal(err)
	}
	p := clientProc(t, e, "guest", capability.Grant{Right: capability.Read, Scope: "personas/"})
	cs := e.connect(t, p, nil)
	var args []string
	for pr, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range pr.Arguments {
			args = append(args, a.Name+map[bool]string{true: "!", false: ""}[a.Required])
		}
	}
	if !slices.Equal(args, []string{"who!", "lang!", "task", "version"}) {
		t.Errorf("the greeter's arguments: %v", args)
	}
	got, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "greeter", Arguments: map[string]string{"who": "Ada", "lang": "French"}})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "Greet Ada in French; Ada is a guest." {
		t.Fatalf("the greeter filled: %+v %v", got, err)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "greeter", Arguments: map[string]string{"who": "Ada"}}); err == nil || !strings.Contains(err.Error(), "needs the argument(s) lang") {
		t.Errorf("a missing argument: %v", err)
	}
}

// A tool-source URI that climbs out of the tools directory is refused as
// not a tool, before any read (found by review: the guard cleaned the
// path before checking it, so it never matched).
func TestToolSourceURIStaysUnderTheToolsDir(t *testing.T) {
	e := newEnv(t, agentos.Config{})
	p := clientProc(t, e, "reader", capability.Grant{Right: capability.Read, Scope: ""})
	cs := e.connect(t, p, nil)
	for _, uri := range []string{"agentos://tools/../agentos.json", "agentos://tools/math/../../agentos.json"} {
		if _, err := readResource(cs, uri); err == nil || !strings.Contains(err.Error(), "not a tool") {
			t.Errorf("%s: %v, want refused as not a tool", uri, err)
		}
	}
}
