package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/approval"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/transpile"
)

// Approvals returns the node's approval gate (nil: none, every tool runs).
func (n *Node) Approvals() *approval.Gate { return n.opts.Approvals }

// riskCache remembers check_tool's risk by content hash: a version's risk
// never changes, and the gate asks for it on every run.
type riskCache struct {
	mu sync.Mutex
	m  map[string]riskOf
}

type riskOf struct {
	level   check.Risk
	reasons []string
}

// maxRiskCache bounds the cache; it is emptied when full.
const maxRiskCache = 4096

// Risk returns check_tool's risk of src (the tool at path) and the reasons
// for its level, cached by content hash.
func (n *Node) Risk(path string, src []byte, hash string) (check.Risk, []string) {
	n.risks.mu.Lock()
	r, ok := n.risks.m[hash]
	n.risks.mu.Unlock()
	if ok {
		return r.level, r.reasons
	}
	res := n.checker.Check(path, src)
	r = riskOf{level: res.Risk}
	for _, f := range res.Risks {
		if f.Level == res.Risk && (len(r.reasons) == 0 || r.reasons[len(r.reasons)-1] != f.Reason) {
			r.reasons = append(r.reasons, f.Reason)
		}
	}
	n.risks.mu.Lock()
	if n.risks.m == nil || len(n.risks.m) >= maxRiskCache {
		n.risks.m = map[string]riskOf{}
	}
	n.risks.m[hash] = r
	n.risks.mu.Unlock()
	return r.level, r.reasons
}

// holderOf names p as the one asking for a run: its token's holder, else
// its name and pid.
func holderOf(p *kernel.Process) string {
	pid := uint64(p.PID())
	if h := p.Holder(); h != "" && h != fmt.Sprintf("pid:%d", pid) {
		return fmt.Sprintf("%s (process %s, pid %d)", h, p.Name(), pid)
	}
	return fmt.Sprintf("process %s (pid %d)", p.Name(), pid)
}

// gateRun holds p's run of the tool at path (resolved) until its version
// is approved, when the gate's policy needs it. It returns the content
// hash the run MUST execute ("" when no approval was needed), or the
// *approval.Error that stopped it.
//
// version, when set, is a recorded version the run asks for
// (tools/x.ts@<hash prefix>): that version, from the journal, is the one
// judged and approved, not the file in the tree.
func (n *Node) gateRun(ctx context.Context, p *kernel.Process, path, version string) (string, error) {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return "", nil
	}
	var src []byte
	var err error
	if version != "" {
		if n.opts.Journal == nil {
			return "", nil // the executor reports that versions need a journal
		}
		_, src, err = n.opts.Journal.ResolveVersion(path, version)
	} else {
		src, err = n.opts.Jail.ReadFile(path)
	}
	if err != nil {
		return "", nil // the executor reports the missing tool or version
	}
	hash := transpile.Hash(src)
	risk, reasons := n.Risk(path, src, hash)
	if !g.Policy().Needs(path, string(risk), func(r string) bool { return hasRight(p, capability.Right(r)) }) {
		return "", nil
	}
	wait := g.Timeout()
	if d := p.WallDeadline(); !d.IsZero() {
		wait = max(min(wait, time.Until(d)), time.Millisecond)
	}
	err = g.Await(ctx, approval.Ask{Path: path, Hash: hash, Risk: string(risk), Reasons: reasons, By: holderOf(p)}, wait)
	return hash, err
}

// gateFailure is the exec_tool result of a run the gate stopped: failed
// with the gate's code as its error kind.
func gateFailure(err error) (ExecResult, bool) {
	var e *approval.Error
	if !errors.As(err, &e) {
		return ExecResult{}, false
	}
	return ExecResult{Result: executor.Result{Logs: []string{}, Error: &executor.Error{Kind: executor.Kind(e.Code), Message: e.Msg}}}, true
}

// NeedsApproval reports whether the tool at path (relative to the tool
// root), as it is now, is held by the gate for a caller holding every
// right, and is not approved: such a tool is written and committed, but
// search_tools does not offer it.
func (n *Node) NeedsApproval(path string) bool {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return false
	}
	src, err := n.opts.Jail.ReadFile(path)
	if err != nil {
		return false
	}
	hash := transpile.Hash(src)
	risk, _ := n.Risk(path, src, hash)
	return g.Policy().Needs(path, string(risk), nil) && !g.Approved(path, hash)
}

// requestApproval makes the pending request of a tool just written whose
// version will need an approval, so that `agentos approvals` lists it
// before anything runs it; it returns the request, or nil.
func (n *Node) requestApproval(p *kernel.Process, path string) *approval.Request {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off || !isToolSource(path, n.toolsDir()) {
		return nil
	}
	src, err := n.opts.Jail.ReadFile(path)
	if err != nil {
		return nil
	}
	hash := transpile.Hash(src)
	risk, reasons := n.Risk(path, src, hash)
	if !g.Policy().Needs(path, string(risk), nil) {
		return nil
	}
	r, err := g.Request(approval.Ask{Path: path, Hash: hash, Risk: string(risk), Reasons: reasons, By: holderOf(p)})
	if err != nil {
		n.opts.Logger.Warn("approval: recording the request of a tool written", "path", path, "err", err)
		return nil
	}
	return &r
}

// isToolSource reports whether path is a tool's source in dir.
func isToolSource(path, dir string) bool {
	if len(path) <= len(dir)+1 || path[:len(dir)+1] != dir+"/" {
		return false
	}
	for _, ext := range []string{".ts", ".js", ".mts", ".tsx"} {
		if len(path) > len(ext) && path[len(path)-len(ext):] == ext {
			return true
		}
	}
	return false
}

// ApprovalAsk is the approval.Ask of the tool at path (as p would name it;
// resolved in the tool root) as it is now: its version's hash, its risk
// and why. MCP's confirmation records its answer with it.
func (n *Node) ApprovalAsk(p *kernel.Process, path string) (approval.Ask, error) {
	resolved, err := n.opts.Jail.Resolve(path)
	if err != nil {
		return approval.Ask{}, err
	}
	src, err := n.opts.Jail.ReadFile(resolved)
	if err != nil {
		return approval.Ask{}, err
	}
	hash := transpile.Hash(src)
	risk, reasons := n.Risk(resolved, src, hash)
	return approval.Ask{Path: resolved, Hash: hash, Risk: string(risk), Reasons: reasons, By: holderOf(p)}, nil
}
