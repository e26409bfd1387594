package host

import (
	"encoding/json"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
)

// runVisibleTo reports whether p may see run m in the console (listed,
// its page, its calls). IMPORTANT: a run shows only to a token that could
// have seen what it holds by acting itself:
//
//   - a run of a tool (an exec run, a tournament's persona): read on the
//     tool;
//   - a forge run (its spec, the model's answers, the tests, the tool's
//     source, the lessons it recalled): the rights forge_tool checks (llm,
//     write on the tools directory), read on the tool it forged when it
//     names one, and memory_read on every agent whose lessons it recalled
//     other than p's own process and the forges' shared memory
//     (forge.ForgeMemory), which every forge reads (memory_read on every
//     agent for a forge recorded before forges named those agents);
//   - any other run of no tool (an agent's conversation, which may hold
//     anything its process read): read on the whole tree.
//
// Covers consumes no use (a listing is not an action).
func runVisibleTo(p *kernel.Process, m journal.RunMeta, toolsDir string) bool {
	switch {
	case m.Tool != "":
		return p.Covers(capability.Read, m.Tool)
	case p.Covers(capability.Read, ""):
		return true
	case m.Kind == forge.Kind:
		return forgeVisibleTo(p, m, toolsDir)
	}
	return false
}

// forgeVisibleTo is runVisibleTo for a forge run seen by a token without
// read on the whole tree.
func forgeVisibleTo(p *kernel.Process, m journal.RunMeta, toolsDir string) bool {
	if !p.Covers(capability.LLM, "") || !p.Covers(capability.Write, toolsDir+"/") {
		return false
	}
	var out struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(m.Result, &out) == nil && out.Path != "" && !p.Covers(capability.Read, out.Path) {
		return false
	}
	var args struct {
		Lessons      string   `json:"lessons"`
		LessonAgents []string `json:"lesson_agents"`
	}
	_ = json.Unmarshal(m.Args, &args)
	if args.Lessons == "1" && len(args.LessonAgents) == 0 {
		// Recorded before forges named the agents: its caller's, unknown.
		return p.Covers(capability.MemoryRead, "")
	}
	for _, a := range args.LessonAgents {
		if a != forge.ForgeMemory && a != p.Name() && !p.Covers(capability.MemoryRead, a) {
			return false
		}
	}
	return true
}
