package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/memory"
)

// tagList is a repeatable --tag flag.
type tagList []string

func (t *tagList) String() string     { return strings.Join(*t, ",") }
func (t *tagList) Set(v string) error { *t = append(*t, v); return nil }

// runMemory shows and edits the agents' long-term memory, through the
// serving node when there is one (it holds the file), else on the file.
func runMemory(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object")
	kind := fs.String("kind", "", "the `KIND`: fact, lesson, preference or page (remember: fact by default)")
	limit := fs.Int("limit", 0, "recall: `N` items at most (default 5)")
	var tags tagList
	fs.Var(&tags, "tag", "remember: a label `TAG` (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	abs, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	req := admin.MemoryRequest{Op: "agents", Kind: *kind, Limit: *limit, Tags: tags}
	if err := parseMemoryAction(&req, pos); err != nil {
		return err
	}
	if req.Kind != "" {
		if _, err := memory.ParseKind(req.Kind); err != nil {
			return usagef("--kind %q: use fact, lesson, preference or page", req.Kind)
		}
	}
	var out json.RawMessage
	if err := memoryDo(ctx, abs, cfg, req, &out); err != nil {
		return err
	}
	return printMemory(stdout, req, out, *asJSON)
}

// memoryDo performs req through the serving node, or on the memory file
// when no node serves the root.
func memoryDo(ctx context.Context, abs string, cfg host.Config, req admin.MemoryRequest, out *json.RawMessage) error {
	c, err := admin.Dial(abs)
	if err == nil {
		defer c.Close()
		return c.Memory(ctx, req, out)
	}
	if !errors.Is(err, admin.ErrNoNode) {
		return err
	}
	store := cfg.OpenMemory(abs)
	defer store.Close()
	if _, err := os.Stat(store.Path()); errors.Is(err, os.ErrNotExist) && req.Op != "remember" {
		// Nothing was ever remembered: answer without creating the file.
		switch req.Op {
		case "agents", "list", "recall":
			*out = json.RawMessage("[]")
			return nil
		}
		return fmt.Errorf("%w: agent %q has no memory (no agent of this root has remembered anything yet: %s does not exist)", memory.ErrNotFound, req.Agent, relTo(abs, store.Path()))
	}
	if err := os.MkdirAll(filepath.Dir(store.Path()), 0o700); err != nil {
		return err
	}
	res, err := host.MemoryOp(store, req)
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	*out = b
	return err
}

// parseMemoryAction reads the action and its words into req: none lists
// the agents with a memory; list AGENT, show AGENT ID..., recall AGENT
// QUERY..., remember AGENT TEXT... and forget AGENT ID...
func parseMemoryAction(req *admin.MemoryRequest, pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	req.Op = pos[0]
	rest := pos[1:]
	need := map[string]string{"list": "AGENT", "show": "AGENT ID...", "recall": "AGENT QUERY...", "remember": "AGENT TEXT...", "forget": "AGENT ID..."}[req.Op]
	switch {
	case need == "":
		return usagef("unknown memory action %q: use list, show, recall, remember or forget", req.Op)
	case len(rest) == 0 || (req.Op != "list" && len(rest) < 2):
		return usagef("agentos memory %s needs %s", req.Op, need)
	case req.Op == "list" && len(rest) > 1:
		return usagef("agentos memory list takes one AGENT, not %d words (the kind goes in --kind)", len(rest))
	}
	req.Agent = rest[0]
	switch req.Op {
	case "show", "forget":
		req.IDs = rest[1:]
	case "recall":
		req.Query = strings.Join(rest[1:], " ")
	case "remember":
		req.Text = strings.Join(rest[1:], " ")
	}
	return nil
}

// memoryPrinters print the answer out to each memory action as text.
var memoryPrinters = map[string]func(w io.Writer, req admin.MemoryRequest, out json.RawMessage) error{
	"agents":   printMemoryAgents,
	"list":     printMemoryItems,
	"show":     printMemoryItems,
	"recall":   printMemoryHits,
	"remember": printRemembered,
	"forget":   printForgotten,
}

// printMemory prints the answer to req.
func printMemory(w io.Writer, req admin.MemoryRequest, out json.RawMessage, asJSON bool) error {
	if asJSON {
		if req.Op == "forget" {
			return fprintJSON(w, json.RawMessage(out))
		}
		key := map[string]string{"agents": "agents", "list": "items", "show": "items", "recall": "hits", "remember": "item"}[req.Op]
		return fprintJSON(w, map[string]json.RawMessage{key: out})
	}
	if p := memoryPrinters[req.Op]; p != nil {
		return p(w, req, out)
	}
	return nil
}

// printMemoryAgents prints the agents with a memory and their items by kind.
func printMemoryAgents(w io.Writer, _ admin.MemoryRequest, out json.RawMessage) error {
	var agents []memory.AgentInfo
	if err := json.Unmarshal(out, &agents); err != nil {
		return err
	}
	if len(agents) == 0 {
		fmt.Fprintln(w, "no agent has a memory yet: agents store items with the remember tool (or 'agentos memory remember AGENT TEXT'), and context paging stores pages")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tITEMS\tFACTS\tLESSONS\tPREFERENCES\tPAGES")
	for _, a := range agents {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", a.Name, a.Items, a.ByKind[memory.Fact], a.ByKind[memory.Lesson], a.ByKind[memory.Preference], a.ByKind[memory.Page])
	}
	return tw.Flush()
}

// printMemoryItems prints list's table of items, or show's items in full.
func printMemoryItems(w io.Writer, req admin.MemoryRequest, out json.RawMessage) error {
	var items []memory.Item
	if err := json.Unmarshal(out, &items); err != nil {
		return err
	}
	if len(items) == 0 {
		fmt.Fprintf(w, "agent %s has no items%s\n", req.Agent, kindSuffix(req.Kind))
		return nil
	}
	if req.Op == "show" {
		for _, it := range items {
			printMemoryItem(w, it)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tCREATED\tTAGS\tTEXT")
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.ID, it.Kind, it.Created.Format("2006-01-02 15:04"), strings.Join(it.Tags, ","), oneLine(it.Text, 72))
	}
	return tw.Flush()
}

// printMemoryItem prints one item in full: its fields, then its text.
func printMemoryItem(w io.Writer, it memory.Item) {
	fmt.Fprintf(w, "id       %s\nagent    %s\nkind     %s\ncreated  %s\n", it.ID, it.Agent, it.Kind, it.Created.Format("2006-01-02 15:04:05Z07:00"))
	if len(it.Tags) > 0 {
		fmt.Fprintf(w, "tags     %s\n", strings.Join(it.Tags, ", "))
	}
	if it.Run != "" {
		fmt.Fprintf(w, "run      %s\n", it.Run)
	}
	fmt.Fprintf(w, "\n%s\n\n", it.Text)
}

// printMemoryHits prints recall's hits, best first, with their scores.
func printMemoryHits(w io.Writer, req admin.MemoryRequest, out json.RawMessage) error {
	var hits []memory.Hit
	if err := json.Unmarshal(out, &hits); err != nil {
		return err
	}
	if len(hits) == 0 {
		fmt.Fprintf(w, "nothing in %s's memory matches %q%s\n", req.Agent, req.Query, kindSuffix(req.Kind))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORE\tID\tKIND\tTEXT")
	for _, h := range hits {
		fmt.Fprintf(tw, "%.2f\t%s\t%s\t%s\n", h.Score, h.ID, h.Kind, oneLine(h.Text, 80))
	}
	return tw.Flush()
}

// printRemembered says which item remember stored (or found already there).
func printRemembered(w io.Writer, _ admin.MemoryRequest, out json.RawMessage) error {
	var it struct {
		memory.Item
		Duplicate bool `json:"duplicate"`
	}
	if err := json.Unmarshal(out, &it); err != nil {
		return err
	}
	if it.Duplicate {
		fmt.Fprintf(w, "already remembered: %s's %s %s\n", it.Agent, it.Kind, it.ID)
	} else {
		fmt.Fprintf(w, "remembered %s's %s %s\n", it.Agent, it.Kind, it.ID)
	}
	return nil
}

// printForgotten says which items forget removed.
func printForgotten(w io.Writer, req admin.MemoryRequest, _ json.RawMessage) error {
	fmt.Fprintf(w, "forgot %s's items %s\n", req.Agent, strings.Join(req.IDs, ", "))
	return nil
}

func kindSuffix(kind string) string {
	if kind == "" {
		return ""
	}
	return " of kind " + kind
}

// oneLine is s on one line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
