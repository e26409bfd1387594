package kerneltools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/vfs"
)

// Approvals returns the node's approval gate (nil: none, every tool runs).
func (n *Node) Approvals() *approval.Gate { return n.opts.Approvals }

// riskCache remembers check_tool's risk by content hash: a version's risk
// never changes, and the gate asks for it on every run.
type riskCache struct {
	mu sync.Mutex
	m  map[string]Rating
}

// maxRiskCache bounds the cache; it is emptied when full.
const maxRiskCache = 4096

// Risk returns check_tool's rating of src (the tool at path): its risk,
// the reasons for its level and the modules its syntax tree names, cached
// by content hash.
func (n *Node) Risk(path string, src []byte, hash string) Rating {
	n.risks.mu.Lock()
	r, ok := n.risks.m[hash]
	n.risks.mu.Unlock()
	if ok {
		return r
	}
	// CheckDeferred rates exactly as Check (check's
	// TestCheckDeferredRatesAsCheck) without compiling the source.
	r = RatingOf(n.checker.CheckDeferred(path, src))
	n.risks.mu.Lock()
	if n.risks.m == nil || len(n.risks.m) >= maxRiskCache {
		n.risks.m = map[string]Rating{}
	}
	n.risks.m[hash] = r
	n.risks.mu.Unlock()
	return r
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
	return n.judgeRead(path, version, nil)
}

// judgeRead is judge of src, the file at path as the caller read it (nil:
// read it here).
func (n *Node) judgeRead(path, version string, src []byte) (Judged, error) {
	var (
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
	} else if src == nil {
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

// cleared is what the approval gate cleared for one run: the entry's
// content hash and the modules judged with it.
type cleared struct {
	// hash is the entry's content hash ("": nothing judged, the gate is
	// off).
	hash string
	// modules are the modules judged with it (path@hash).
	modules []string
	// gated: the gate applies to this caller and tool, so every module the
	// run loads that is not among modules is judged as it loads
	// (admitModule).
	gated bool
}

// gateRun judges p's run of the tool at path (resolved) and holds it until
// its version is approved, when the gate's policy needs it. It returns what
// it cleared: IMPORTANT: the run MUST execute exactly the entry whose hash
// it returns (the caller passes it as RunRequest.Hash, and the executor
// refuses other content), so that a file patched after the judgment never
// runs on it, and every module the run loads that the gate did not judge
// MUST be judged as it loads (RunRequest.GateModules and Judged). With the
// gate off it returns the zero cleared (nothing judged). A tool that cannot
// be read or judged is refused (an error), never let through; a run the
// gate stopped is an *approval.Error.
//
// The version's risk is the highest over its entry and every module it
// requires (Judge), and its approval covers all of their hashes.
//
// version, when set, is a recorded version the run asks for
// (tools/x.ts@<hash prefix>): that version, from the journal, is the one
// judged and approved, not the file in the tree. src, when not nil, is the
// entry as the caller read it (readEntry): the bytes judged, and the ones
// the run MUST then execute (RunRequest.Source).
func (n *Node) gateRun(ctx context.Context, p *kernel.Process, path, version string, src []byte) (cleared, error) {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return cleared{}, nil
	}
	if version != "" && n.opts.Journal == nil {
		return cleared{}, nil // the executor reports that versions need a journal; nothing runs
	}
	j, err := n.judgeRead(path, version, src)
	if err != nil {
		return cleared{}, fmt.Errorf("%w: %s is not run: it cannot be judged: %w", ErrGate, path, err)
	}
	holds := func(r string) bool { return hasRight(p, capability.Right(r)) }
	c := cleared{hash: j.Hash, modules: j.Modules, gated: g.Policy().Applies(path, holds)}
	if !g.Policy().Needs(path, string(j.Risk), holds) || kerneltool.Confirmed(ctx, path, j.Key) {
		return c, nil
	}
	wait := g.Timeout()
	if d := p.WallDeadline(); !d.IsZero() {
		wait = max(min(wait, time.Until(d)), time.Millisecond)
	}
	if err := g.Await(ctx, askOf(j, holderOf(p)), wait); err != nil {
		return cleared{}, err
	}
	return c, nil
}

// admitRemote is the executor actor's AdmitRemote: a run another node
// placed here (path, as its Run names it; token, its caller's) is judged
// by this node's approval gate as gateRun judges exec_tool here, with the
// caller's rights from its token. It does not wait for a decision: a
// version that needs an approval this node has not recorded is refused
// with execclient.ErrNotCleared (approvals are kept per node; the placing
// node, whose gate cleared it, then runs it itself), and nothing is
// recorded here.
func (n *Node) admitRemote(_ context.Context, path, token string) (executor.Admitted, error) {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return executor.Admitted{}, nil
	}
	entry, version, _ := executor.SplitVersion(path)
	if version != "" && n.opts.Journal == nil {
		return executor.Admitted{}, nil // the executor reports that versions need a journal; nothing runs
	}
	tok, err := capability.Decode(token)
	if err != nil {
		return executor.Admitted{}, fmt.Errorf("%w: the caller's token: %w", ErrGate, err)
	}
	j, err := n.judge(entry, version)
	if err != nil {
		return executor.Admitted{}, fmt.Errorf("%w: %s is not run: it cannot be judged: %w", ErrGate, path, err)
	}
	holds := func(r string) bool {
		return slices.ContainsFunc(tok.Grants, func(g capability.Grant) bool { return string(g.Right) == r })
	}
	adm := executor.Admitted{Hash: j.Hash, Modules: j.Modules, Gated: g.Policy().Applies(entry, holds)}
	ask := askOf(j, tok.Holder)
	if !g.Policy().Needs(entry, string(j.Risk), holds) || g.Approved(ask.Path, ask.Hash) {
		return adm, nil
	}
	return executor.Admitted{}, fmt.Errorf("%w: %s is rated %s and this version is not approved on this node (%s): a run placed from another node does not wait for an approval here",
		execclient.ErrNotCleared, path, j.Risk, approval.CodeRequired)
}

// admitModule judges module m (source src), which a gated run of entry
// loads although the gate did not judge it with the entry: a require the
// syntax tree could not resolve (a computed path, require aliased or
// passed around), or a module changed since the judgment
// (executor.ActorOptions.AdmitModule). A module whose own risk the policy
// does not gate runs. One at a gated level runs only when that version of
// the module is approved on its own; otherwise its pending request is
// recorded (so that 'agentos approvals' lists it) and the require is
// refused, saying how to approve it. IMPORTANT: a high-risk module never
// runs unapproved, however it is reached.
func (n *Node) admitModule(entry string, m journal.Module, src []byte) error {
	g := n.opts.Approvals
	if g == nil || g.Policy().Off {
		return nil
	}
	r := n.Risk(m.Path, src, m.Hash)
	if !g.Policy().Needs(entry, string(r.Risk), nil) || g.Approved(m.Path, m.Hash) {
		return nil
	}
	how := "approve it ('agentos approve " + m.Path + "')"
	if req, err := g.Request(approval.Ask{Path: m.Path, Hash: m.Hash, Risk: string(r.Risk), Reasons: r.Reasons, By: "a run of " + entry}); err == nil {
		how = "approve request " + req.ID + " ('agentos approve " + req.ID + "')"
	}
	return driver.Errorf(string(approval.CodeRequired), "%s: require of %s from a run of %s: refused: the approval gate did not judge this module with the tool (it is required by a path the syntax tree cannot resolve, or it changed since the judgment), and it is rated %s (%s): %s, or require it with a string literal so that the gate judges it with the tool", approval.CodeRequired, m.Path, entry, r.Risk, strings.Join(r.Reasons, "; "), how)
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
	return ExecResult{Result: execclient.Result{Logs: []string{}, Error: &executor.Error{Kind: executor.Kind(e.Code), Message: e.Msg}}}, true
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
func (n *Node) ApprovalAsk(handle proc.Process, path string) (approval.Ask, error) {
	p, err := n.process(handle)
	if err != nil {
		return approval.Ask{}, err
	}
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
