package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/approval"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/vfs"
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

// judge judges the tool at path (resolved) as a run would load it: the
// file in the tree, or, with version set (tools/x.ts@<hash prefix>), the
// recorded version from the journal with the modules it runs with.
func (n *Node) judge(path, version string) (Judged, error) {
	var (
		src    []byte
		pinned []journal.Module
		source func(string) ([]byte, error)
	)
	if version != "" {
		if n.opts.Journal == nil {
			return Judged{}, fmt.Errorf("%s@%s names a recorded version, and versions are kept in the journal: this node has none (run the current file as %s)", path, version, path)
		}
		v, b, err := n.opts.Journal.ResolveVersion(path, version)
		if err != nil {
			return Judged{}, notFound{err} // exec_tool answers not_found, as the executor would
		}
		src, pinned, source = b, v.Modules, n.opts.Journal.Source
	} else {
		b, err := n.opts.Jail.ReadFile(path)
		if err != nil {
			return Judged{}, err
		}
		src = b
	}
	return Judge(n.opts.Jail, n.toolsDir(), path, src, pinned, source, n.Risk)
}

// notFound is a version the journal does not have: it is fs.ErrNotExist.
type notFound struct{ err error }

func (e notFound) Error() string        { return e.err.Error() }
func (e notFound) Unwrap() error        { return e.err }
func (e notFound) Is(target error) bool { return target == fs.ErrNotExist }

// isMissing reports whether the gate could not judge a tool because it is
// not there (a file, or a recorded version): exec_tool answers not_found.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, vfs.ErrNotFound)
}

// askOf is the approval.Ask of j, asked by.
func askOf(j Judged, by string) approval.Ask {
	return approval.Ask{Path: j.Path, Hash: j.Key, Source: j.Hash, Modules: j.Modules, Risk: string(j.Risk), Reasons: j.Reasons, By: by}
}

// gateRun judges p's run of the tool at path (resolved) and holds it until
// its version is approved, when the gate's policy needs it. It returns the
// entry's source judged and its content hash: IMPORTANT: the run MUST
// execute exactly these bytes (the caller passes the hash as
// RunRequest.Hash, and the executor refuses other content), so that a file
// patched after the judgment never runs on it. With the gate off it
// returns "" and nil (nothing judged). A tool that cannot be read or
// judged is refused (an error), never let through; a run the gate stopped
// is an *approval.Error.
//
// The version's risk is the highest over its entry and every module it
// requires (Judge), and its approval covers all of their hashes.
//
// version, when set, is a recorded version the run asks for
// (tools/x.ts@<hash prefix>): that version, from the journal, is the one
// judged and approved, not the file in the tree.
func (n *Node) gateRun(ctx context.Context, p *kernel.Process, path, version string) (string, []byte, error) {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return "", nil, nil
	}
	if version != "" && n.opts.Journal == nil {
		return "", nil, nil // the executor reports that versions need a journal; nothing runs
	}
	j, err := n.judge(path, version)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s is not run: it cannot be judged: %w", ErrGate, path, err)
	}
	if !g.Policy().Needs(path, string(j.Risk), func(r string) bool { return hasRight(p, capability.Right(r)) }) {
		return j.Hash, j.Src, nil
	}
	wait := g.Timeout()
	if d := p.WallDeadline(); !d.IsZero() {
		wait = max(min(wait, time.Until(d)), time.Millisecond)
	}
	if err := g.Await(ctx, askOf(j, holderOf(p)), wait); err != nil {
		return "", nil, err
	}
	return j.Hash, j.Src, nil
}

// afterGate, when set (tests only), is called between the gate's judgment
// of a run and the run: where a concurrent write would land.
var afterGate func(path string)

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
	return n.needsApproval()(path)
}

// needsApproval returns NeedsApproval for a batch of tools (search_tools):
// the approvals file is read once, at the first tool that needs an
// approval, not once per tool.
func (n *Node) needsApproval() func(path string) bool {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return func(string) bool { return false }
	}
	var approved map[[2]string]bool
	return func(path string) bool {
		j, err := n.judge(path, "")
		if err != nil {
			return false // not offered or not runnable anyway; exec_tool says why
		}
		if !g.Policy().Needs(path, string(j.Risk), nil) {
			return false
		}
		if approved == nil {
			approved = map[[2]string]bool{}
			rs, err := g.Store().List(approval.StateApproved)
			if err != nil {
				return true // unknown: not offered
			}
			for _, r := range rs {
				approved[[2]string{r.Path, r.Hash}] = true
			}
		}
		return !approved[[2]string{path, j.Key}]
	}
}

// requestApproval makes the pending request of a tool just written whose
// version will need an approval, so that `agentos approvals` lists it
// before anything runs it; it returns the request, or nil.
func (n *Node) requestApproval(p *kernel.Process, path string) *approval.Request {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off || !isToolSource(path, n.toolsDir()) {
		return nil
	}
	j, err := n.judge(path, "")
	if err != nil || !g.Policy().Needs(path, string(j.Risk), nil) {
		return nil
	}
	r, err := g.Request(askOf(j, holderOf(p)))
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
// resolved in the tool root) as it is now: its version's approval key
// (Hash), its entry's content hash (Source), the modules it requires, its
// risk and why. MCP's confirmation records its answer with it.
func (n *Node) ApprovalAsk(p *kernel.Process, path string) (approval.Ask, error) {
	resolved, err := n.opts.Jail.Resolve(path)
	if err != nil {
		return approval.Ask{}, err
	}
	j, err := n.judge(resolved, "")
	if err != nil {
		return approval.Ask{}, err
	}
	return askOf(j, holderOf(p)), nil
}

// VersionAsk is the approval.Ask of the tool at path (relative to the tool
// root, resolved here) as it is now, or, with version set, of its recorded
// version tools/x.ts@<version> from the journal: what an approval by path
// decides ('agentos approve tools/x.ts'), asked by by.
func (n *Node) VersionAsk(path, version, by string) (approval.Ask, error) {
	resolved, err := n.opts.Jail.Resolve(path)
	if err != nil {
		return approval.Ask{}, err
	}
	j, err := n.judge(resolved, version)
	if err != nil {
		return approval.Ask{}, err
	}
	return askOf(j, by), nil
}
