package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/memory"
)

// Memory returns the agents' long-term memory store (memory.file, opened on
// first use). The embedding program is the operator: its calls are not
// checked against any capability; agents reach their memory only through
// the remember, recall and forget kernel tools, under their own rights.
func (rt *Runtime) Memory() *memory.Store { return rt.mem }

// Remember stores it in agent's memory (see memory.Store.Remember): a
// fact, lesson or preference the agent finds with recall on its next runs.
func (rt *Runtime) Remember(agent string, it memory.Item) (memory.Item, bool, error) {
	return rt.mem.Remember(agent, it)
}

// Recall returns agent's items best matching query (see
// memory.Store.Recall).
func (rt *Runtime) Recall(agent, query string, o memory.RecallOptions) ([]memory.Hit, error) {
	return rt.mem.Recall(agent, query, o)
}

// Forget deletes agent's items ids, all or none.
func (rt *Runtime) Forget(agent string, ids ...string) error {
	return rt.mem.Forget(agent, ids...)
}

// MemoryItems lists agent's items of kind ("": every kind), oldest first.
func (rt *Runtime) MemoryItems(agent string, kind memory.Kind) ([]memory.Item, error) {
	return rt.mem.List(agent, kind)
}

// MemoryAgents lists the agents that have a memory, with their counts.
func (rt *Runtime) MemoryAgents() ([]memory.AgentInfo, error) {
	return rt.mem.Agents()
}

// Memory implements admin.Backend: 'agentos memory' through the node.
func (b adminBackend) Memory(_ context.Context, req admin.MemoryRequest) (any, error) {
	return MemoryOp(b.rt.mem, req)
}

// MemoryOp performs one 'agentos memory' operation (admin.MemoryRequest)
// on store, as the operator, and returns its JSON-encodable answer. A
// failure is an *admin.StatusError: 404 for an item or agent that is not
// there, 400 for a bad request.
func MemoryOp(store *memory.Store, req admin.MemoryRequest) (any, error) {
	out, err := memoryOp(store, req)
	if err != nil {
		code := http.StatusUnprocessableEntity
		switch {
		case errors.Is(err, memory.ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, memory.ErrInvalid):
			code = http.StatusBadRequest
		}
		return nil, &admin.StatusError{Code: code, Err: err}
	}
	return out, nil
}

func memoryOp(store *memory.Store, req admin.MemoryRequest) (any, error) {
	var kind memory.Kind
	if req.Kind != "" {
		k, err := memory.ParseKind(req.Kind)
		if err != nil {
			return nil, err
		}
		kind = k
	}
	if req.Op != "agents" {
		if err := memory.CheckName(req.Agent); err != nil {
			return nil, err
		}
	}
	switch req.Op {
	case "agents":
		return store.Agents()
	case "list":
		return store.List(req.Agent, kind)
	case "show":
		if len(req.IDs) == 0 {
			return nil, fmt.Errorf("%w: name the items to show by id", memory.ErrInvalid)
		}
		out := make([]memory.Item, 0, len(req.IDs))
		for _, id := range req.IDs {
			it, err := store.Get(req.Agent, id)
			if err != nil {
				return nil, err
			}
			out = append(out, it)
		}
		return out, nil
	case "recall":
		var kinds []memory.Kind
		if kind != "" {
			kinds = []memory.Kind{kind}
		}
		hits, err := store.Recall(req.Agent, req.Query, memory.RecallOptions{Limit: req.Limit, Kinds: kinds})
		if hits == nil && err == nil {
			hits = []memory.Hit{}
		}
		return hits, err
	case "remember":
		if kind == memory.Page {
			return nil, fmt.Errorf("%w: pages are written by context paging; remember a fact, lesson or preference", memory.ErrInvalid)
		}
		it, added, err := store.Remember(req.Agent, memory.Item{Kind: kind, Text: req.Text, Tags: req.Tags})
		if err != nil {
			return nil, err
		}
		return struct {
			memory.Item
			Duplicate bool `json:"duplicate,omitempty"`
		}{it, !added}, nil
	case "forget":
		if len(req.IDs) == 0 {
			return nil, fmt.Errorf("%w: name the items to forget by id", memory.ErrInvalid)
		}
		if err := store.Forget(req.Agent, req.IDs...); err != nil {
			return nil, err
		}
		return map[string]any{"agent": req.Agent, "forgotten": req.IDs}, nil
	default:
		return nil, fmt.Errorf("%w: unknown memory operation %q: use agents, list, show, recall, remember or forget", memory.ErrInvalid, req.Op)
	}
}
