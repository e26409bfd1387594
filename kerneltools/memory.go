package kerneltools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/clip"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/memory"
)

// The memory tools' argument structs (see toolDefs).

type rememberArgs struct {
	Text string     `json:"text" jsonschema:"What to remember, in a sentence or a few: a fact, a lesson learnt or a preference."`
	Kind memoryKind `json:"kind,omitempty" jsonschema:"fact (default), lesson or preference."`
	Tags memoryTags `json:"tags,omitempty" jsonschema:"Labels to find it by, e.g. [\"billing\", \"customer-42\"]."`
}

type recallArgs struct {
	Query string      `json:"query" jsonschema:"What to recall, in words: a name, a value, a topic."`
	Limit searchLimit `json:"limit,omitempty" jsonschema:"How many items at most (default 5)."`
	Kind  recallKind  `json:"kind,omitempty" jsonschema:"Only this kind: fact, lesson, preference, or page (turns paged out of your context). Default: every kind."`
	Agent string      `json:"agent,omitempty" jsonschema:"Whose memory: another agent's name (needs the memory_read right on it). Default: your own."`
}

type forgetArgs struct {
	ID string `json:"id" jsonschema:"The id of one of your items, as remember or recall gave it."`
}

// memoryKind is remember's kind, recallKind recall's, memoryTags
// remember's tags (an array of strings, never null).
type (
	memoryKind string
	recallKind string
	memoryTags []string
)

// MemoryName is the name p's memory is kept under: its process name, or,
// for a process spawned without one, an ephemeral name ("#<pid>") whose
// memory lives only as long as the process.
func MemoryName(p *kernel.Process) string {
	if n := p.Name(); n != "" {
		return n
	}
	return memory.EphemeralPrefix + strconv.FormatUint(uint64(p.PID()), 10)
}

// BindMemory has p's memory tools (remember, recall, forget) use name's
// memory instead of MemoryName(p), until p ends: an agent process keeps
// the memory of its first incarnation (a restart, a restore under another
// name) and an unnamed agent's memory follows its run, not its pid. The
// binder owns the memory's lifetime: a bound ephemeral memory is NOT
// dropped when p ends.
func (n *Node) BindMemory(p proc.Process, name string) {
	if _, loaded := n.memNames.Swap(p, name); !loaded {
		go func() {
			<-p.Done()
			n.memNames.Delete(p)
		}()
	}
}

// memoryName is p's memory name: the bound one, else MemoryName(p). A
// process whose own name starts with memory.EphemeralPrefix has none: it
// would own an unnamed process's memory.
func (n *Node) memoryName(p *kernel.Process) (name string, bound bool, err error) {
	if v, ok := n.memNames.Load(p); ok {
		return v.(string), true, nil
	}
	if err := memory.CheckProcessName(p.Name()); err != nil {
		return "", false, fmt.Errorf("%w: process %v: %w", kerneltool.ErrInvalidArgs, p.PID(), err)
	}
	return MemoryName(p), false, nil
}

// Memory returns the node's memory store (nil: none is configured).
func (n *Node) Memory() *memory.Store { return n.opts.Memory }

// memoryStore returns the store, or says none is configured.
func (n *Node) memoryStore() (*memory.Store, error) {
	if n.opts.Memory == nil {
		return nil, errors.New("no memory store is configured for this node (kerneltools.Options.Memory; agentos.Start configures .agentos/memory.db)")
	}
	return n.opts.Memory, nil
}

// ownMemory returns p's memory name, and arranges for an ephemeral one to
// be dropped when p ends.
func (n *Node) ownMemory(p *kernel.Process) (string, error) {
	name, bound, err := n.memoryName(p)
	if err != nil {
		return "", err
	}
	if !bound && strings.HasPrefix(name, memory.EphemeralPrefix) {
		if _, loaded := n.ephemeral.LoadOrStore(name, true); !loaded {
			store := n.opts.Memory
			go func() {
				<-p.Done()
				store.Drop(name)
				n.ephemeral.Delete(name)
			}()
		}
	}
	return name, nil
}

func (n *Node) remember(_ context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a rememberArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	store, err := n.memoryStore()
	if err != nil {
		return nil, err
	}
	kind, err := memory.ParseKind(string(a.Kind))
	if err != nil || kind == memory.Page {
		return nil, fmt.Errorf("%w: kind %q: use fact, lesson or preference (pages are written by context paging)", kerneltool.ErrInvalidArgs, clip.Text(string(a.Kind)))
	}
	own, err := n.ownMemory(p)
	if err != nil {
		return nil, err
	}
	p.CountCall()
	it, added, err := store.Remember(own, memory.Item{Kind: kind, Text: a.Text, Tags: a.Tags})
	if err != nil {
		return nil, err
	}
	return RememberResult{ID: it.ID, Kind: it.Kind, Duplicate: !added}, nil
}

// RememberResult is the remember tool's answer.
type RememberResult struct {
	ID   string      `json:"id"`
	Kind memory.Kind `json:"kind"`
	// Duplicate is true when the same text was already remembered (ID is
	// that item's).
	Duplicate bool `json:"duplicate,omitempty"`
}

func (n *Node) recall(_ context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a recallArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if a.Limit < 0 || a.Limit > maxSearchLimit {
		return nil, fmt.Errorf("%w: limit %d must be between %d and %d", kerneltool.ErrInvalidArgs, a.Limit, minSearchLimit, maxSearchLimit)
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, fmt.Errorf("%w: the query is empty; say what to recall in words", kerneltool.ErrInvalidArgs)
	}
	store, err := n.memoryStore()
	if err != nil {
		return nil, err
	}
	var kinds []memory.Kind
	if a.Kind != "" {
		k, err := memory.ParseKind(string(a.Kind))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", kerneltool.ErrInvalidArgs, err)
		}
		kinds = []memory.Kind{k}
	}
	name, _, err := n.memoryName(p)
	if err != nil {
		return nil, err
	}
	if a.Agent != "" && a.Agent != name {
		if strings.HasPrefix(a.Agent, memory.EphemeralPrefix) {
			return nil, fmt.Errorf("%w: agent %q: the memory of a process without a name is its own alone", kerneltool.ErrInvalidArgs, clip.Text(a.Agent))
		}
		if err := memory.CheckName(a.Agent); err != nil {
			return nil, fmt.Errorf("%w: %w", kerneltool.ErrInvalidArgs, err)
		}
		// IMPORTANT: another agent's memory is read only under the
		// memory_read right on its name.
		if err := p.Check(capability.MemoryRead, a.Agent); err != nil {
			return nil, fmt.Errorf("reading agent %q's memory: %w", clip.Text(a.Agent), err)
		}
		name = a.Agent
	} else if name, err = n.ownMemory(p); err != nil {
		return nil, err
	}
	p.CountCall()
	hits, err := store.Recall(name, a.Query, memory.RecallOptions{Limit: int(a.Limit), Kinds: kinds})
	if err != nil {
		return nil, err
	}
	if hits == nil {
		hits = []memory.Hit{}
	}
	return hits, nil
}

func (n *Node) forget(_ context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a forgetArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	store, err := n.memoryStore()
	if err != nil {
		return nil, err
	}
	own, err := n.ownMemory(p)
	if err != nil {
		return nil, err
	}
	p.CountCall()
	if err := store.Forget(own, a.ID); err != nil {
		return nil, err
	}
	return map[string]string{"forgotten": a.ID}, nil
}
