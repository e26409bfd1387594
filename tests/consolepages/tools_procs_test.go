package consolepages_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/supervisor"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
)

const greetV1 = `/** Greets a person by name, politely. @tag greeting */
export default function greet(args: { name: string }): string {
  return "Hello, " + args.name;
}
`

const greetV2 = `/** Greets a person by name, politely. @tag greeting */
export default function greet(args: { name: string }): string {
  return "Good day, " + args.name + "!";
}
`

// call calls a kernel tool as the default process.
func call(t *testing.T, rt *host.Runtime, tool string, args any) json.RawMessage {
	t.Helper()
	b, _ := json.Marshal(args)
	out, err := rt.Call(context.Background(), tool, b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// greetTwoVersions writes greet.ts, runs it, changes it (through the
// registration gate, which replays the first version's run) and runs it
// again.
func greetTwoVersions(t *testing.T, rt *host.Runtime) {
	t.Helper()
	call(t, rt, "write_file", map[string]string{"path": "tools/people/greet.ts", "content": greetV1})
	call(t, rt, "exec_tool", map[string]any{"path": "tools/people/greet.ts", "args": map[string]string{"name": "Ada"}})
	call(t, rt, "write_file", map[string]string{"path": "tools/people/greet.ts", "content": greetV2})
	call(t, rt, "exec_tool", map[string]any{"path": "tools/people/greet.ts", "args": map[string]string{"name": "Alan"}})
}

// The Tools page finds a tool by search (the registry's ranking), shows
// its versions, the diff of the newest against the one before, its runs,
// its risk and the registration gate's last report; a token that may not
// read the tool finds nothing and is refused its page.
func TestToolsSearchVersionsDiff(t *testing.T) {
	rt, ts := node(t)
	greetTwoVersions(t, rt)
	b := login(t, ts, mint(rt, "reader", capability.Grant{Right: capability.Read, Scope: "tools/"}))
	code, page := b.get("/tools?q=greet+a+person+politely")
	if code != http.StatusOK || !strings.Contains(page, `href="/tools/tools/people/greet.ts"`) {
		t.Fatalf("search: %d\n%s", code, page)
	}
	code, page = b.get("/tools/tools/people/greet.ts")
	if code != http.StatusOK {
		t.Fatalf("the tool's page: %d\n%s", code, page)
	}
	for _, want := range []string{
		`<tr class="del">`, `&#34;Hello, &#34; &#43; args.name`, // the old line, removed
		`<tr class="add">`, `&#34;Good day, &#34;`, // the new line, added
		"gate: replayed 1 recorded run(s)", // the gate's report on the change
		`<span class="status different">different</span>`,
		"risk <strong>low</strong>",
		`<span class="tag">current</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the tool's page lacks %q", want)
		}
	}
	if n := strings.Count(page, `?version=`); n < 2 {
		t.Errorf("the tool's page lists %d versions, want 2:\n%s", n, page)
	}
	if n := strings.Count(page, `href="/runs/`); n < 2 {
		t.Errorf("the version's runs are not listed:\n%s", page)
	}

	other := login(t, ts, mint(rt, "other", capability.Grant{Right: capability.Read, Scope: "tools/lib/"}))
	if _, page := other.get("/tools?q=greet+a+person+politely"); strings.Contains(page, "greet.ts") {
		t.Errorf("a token without read on the tool finds it:\n%s", page)
	}
	if code, _ := other.get("/tools/tools/people/greet.ts"); code != http.StatusForbidden {
		t.Errorf("the tool's page for a token without read: %d, want 403", code)
	}
}

// The Processes page shows the process tree: a supervisor with its child
// under it, marked a supervisor once it restarted it; the events list
// the restart.
func TestProcessTree(t *testing.T) {
	rt, ts := node(t)
	started := make(chan struct{}, 4)
	first := true
	sup, err := rt.Kernel().Spawn(kernel.Supervise(kernel.SupervisorSpec{
		Strategy: supervisor.OneForOne, Intensity: 5,
		Children: []kernel.ChildSpec{{Name: "worker", Options: kernel.SpawnOptions{Name: "worker-1"}, Main: func(ctx context.Context, p *kernel.Process) error {
			started <- struct{}{}
			if first {
				first = false
				return errors.New("first start fails")
			}
			<-ctx.Done()
			return nil
		}}},
	}), kernel.SpawnOptions{Name: "pool-sup", Image: "pool", Grants: []capability.Grant{{Right: capability.Spawn}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Kernel().Kill(sup.PID(), "test over")
	<-started
	<-started // restarted once
	b := login(t, ts, mint(rt, "ops", capability.Grant{Right: capability.Read, Scope: "tools/"}))
	code, page := b.get("/procs")
	if code != http.StatusOK {
		t.Fatalf("/procs: %d\n%s", code, page)
	}
	supRow := strings.Index(page, "<strong>pool-sup</strong>")
	childRow := strings.Index(page, "<strong>worker-1</strong>")
	if supRow < 0 || childRow < supRow {
		t.Fatalf("the tree does not show worker-1 under pool-sup:\n%s", page)
	}
	row := page[supRow:childRow]
	if !strings.Contains(row, `<span class="tag">supervisor</span>`) || !strings.Contains(row, "1 child(ren)") {
		t.Errorf("pool-sup's row: %s", row)
	}
	if !strings.Contains(page[childRow-200:childRow], "└─ ") {
		t.Errorf("worker-1 is not drawn as pool-sup's child: %s", page[childRow-200:childRow])
	}
	if !strings.Contains(page, `<span class="status restart">restart</span>`) {
		t.Errorf("the events do not show the restart")
	}
	// A node in no cluster says so.
	if code, page := b.get("/cluster"); code != http.StatusOK || !strings.Contains(page, "in no cluster") {
		t.Errorf("/cluster: %d\n%s", code, page)
	}
}
