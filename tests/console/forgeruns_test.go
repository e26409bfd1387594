package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/journal"
)

// journalRun writes a finished run of kind with args and result into the
// node's journal, as the forge and the agent loop record theirs.
func journalRun(t *testing.T, n *node, kind string, args, result any) string {
	t.Helper()
	a, _ := json.Marshal(args)
	r, _ := json.Marshal(result)
	run, err := n.rt.Journal().Begin(journal.RunMeta{Kind: kind, Args: a})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.End(journal.StatusOK, r, nil); err != nil {
		t.Fatal(err)
	}
	return run.ID()
}

// grants mints a token of the node with gs.
func (n *node) grants(gs ...capability.Grant) string {
	return n.rt.Kernel().Authority().Mint("tester", gs, capability.Caveats{}).Encode()
}

// A forge run shows to a token that may forge (llm, write on the tools
// directory), may read the tool it forged, and may read the memory of the
// agents whose lessons it recalled (its own process's and the forges'
// shared memory need no right); an agent's run, whose conversation may
// hold anything its process read, only to a token that may read the whole
// tree. Anonymous access with the default grants (the default process)
// sees the forges its process made, as `agentos serve --ui-anonymous`
// after `agentos demo` shows them. Every refusal is the answer for no run.
func TestForgeAndAgentRunsVisibleToWhoCouldHaveMadeThem(t *testing.T) {
	n := startNode(t, console.Options{Anonymous: true})
	forged := journalRun(t, n, "forge", map[string]any{"spec": "slugify a title", "lessons": "1", "lesson_agents": []string{"agent", "forge"}},
		map[string]any{"path": "tools/slug.ts", "reused": false})
	failed := journalRun(t, n, "forge", map[string]any{"spec": "an impossible tool"}, map[string]any{"path": ""})
	agentRun := journalRun(t, n, "agent", map[string]any{"task": "summarise the orders"}, "done")
	// Recorded before forges named whose lessons they recalled.
	older := journalRun(t, n, "forge", map[string]any{"spec": "an older forge", "lessons": "1"}, map[string]any{"path": "tools/old.ts"})

	g := func(r capability.Right, scope string) capability.Grant {
		return capability.Grant{Right: r, Scope: scope}
	}
	forger := []capability.Grant{g(capability.LLM, ""), g(capability.Write, "tools/"), g(capability.Read, "tools/")}
	cases := []struct {
		name    string
		tok     string // "" is anonymous access (the default process)
		visible map[string]bool
	}{
		{"anonymous default grants", "", map[string]bool{forged: true, failed: true, agentRun: false, older: false}},
		{"a forger without memory_read on agent", n.grants(forger...), map[string]bool{forged: false, failed: true, agentRun: false}},
		{"a forger with memory_read on agent", n.grants(append(forger, g(capability.MemoryRead, "agent"))...), map[string]bool{forged: true, failed: true, agentRun: false, older: false}},
		{"a forger with memory_read on every agent", n.grants(append(forger, g(capability.MemoryRead, ""))...), map[string]bool{forged: true, failed: true, agentRun: false, older: true}},
		{"a reader of tools/ that may not forge", n.grants(g(capability.Read, "tools/"), g(capability.MemoryRead, "")), map[string]bool{forged: false, failed: false, agentRun: false}},
		{"a forger who may not read the forged tool", n.grants(g(capability.LLM, ""), g(capability.Write, "tools/"), g(capability.Read, "tools/other/"), g(capability.MemoryRead, "")),
			map[string]bool{forged: false, failed: true, agentRun: false}},
		{"a reader of the whole tree", n.grants(g(capability.Read, "")), map[string]bool{forged: true, failed: true, agentRun: true, older: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := client(t)
			if tc.tok != "" {
				login(t, n, c, tc.tok)
			}
			_, list := get(t, c, n.url+"/runs")
			for id, want := range tc.visible {
				code, page := get(t, c, n.url+"/runs/"+id)
				if got := code == http.StatusOK; got != want {
					t.Errorf("run %s: page %d (visible %v, want %v): %.300s", id, code, got, want, page)
				}
				if !want && code != http.StatusNotFound {
					t.Errorf("run %s refused with %d, want 404 (a refused run is answered as no run)", id, code)
				}
				if !want && strings.Contains(page, "slugify") {
					t.Errorf("run %s's refusal discloses its spec", id)
				}
				if got := strings.Contains(list, id); got != want {
					t.Errorf("run %s listed %v, want %v", id, got, want)
				}
			}
		})
	}
}
