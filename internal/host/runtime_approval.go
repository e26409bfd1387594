package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/governance/personagate"
	"github.com/agentos-run/agentos/kerneltools"
	"github.com/agentos-run/agentos/persona"
	"github.com/agentos-run/agentos/vfs"
)

// ApproveOptions say who decides and why (Runtime.Approve, Runtime.Deny).
type ApproveOptions struct {
	// By is recorded as who decided (default "go-api").
	By string
	// Reason is recorded with the decision; a denied run's error carries
	// it.
	Reason string
}

// Approve approves target: an approval request id ("a-…", or a unique
// prefix of at least 4 digits), or a tool path relative to the tool root,
// which approves its pending request, or, when none is pending, the
// tool's current version as the gate judges it (an approval before the
// first run). IMPORTANT: a path with more than one version pending is
// refused (approval.ErrAmbiguous, listing them): name one by its id or as
// tools/x.ts@<hash> (at least approval.MinVersionPrefix hex digits of the
// request's hash or its entry's hash), which also names a recorded
// version from the journal. The returned request's Hash is the version
// decided. The runs
// waiting on it go on at once. The decision is recorded (fsynced) with
// opts.By and the version's content hash: a changed tool needs a new
// approval.
func (rt *Runtime) Approve(target string, opts ApproveOptions) (approval.Request, error) {
	return rt.decide(target, true, opts)
}

// Deny denies target (as Approve names it): the runs waiting on it end
// with error kind approval_denied and opts.Reason, and so does every later
// run of that version until it is approved.
func (rt *Runtime) Deny(target string, opts ApproveOptions) (approval.Request, error) {
	return rt.decide(target, false, opts)
}

// Approvals lists the approval requests in state (every state when empty:
// approval.StatePending for the ones waiting), oldest first.
func (rt *Runtime) Approvals(state approval.State) ([]approval.Request, error) {
	if rt.gate == nil {
		return nil, nil
	}
	return rt.gate.List(state)
}

// ApprovalGate returns the runtime's approval gate.
func (rt *Runtime) ApprovalGate() *approval.Gate { return rt.gate }

func (rt *Runtime) decide(target string, approve bool, opts ApproveOptions) (approval.Request, error) {
	if opts.By == "" {
		opts.By = "go-api"
	}
	if rt.gate == nil {
		// Persona versions are held whatever the tools' gate says.
		if r, ok, err := rt.decidePersona(target, approve, opts); ok || err != nil {
			return r, err
		}
		return approval.Request{}, errors.New("agentos: the approval gate is off (governance.approval.off in agentos.json): nothing waits for an approval")
	}
	return rt.gate.DecideTarget(target, approve, opts.By, opts.Reason, func(p, version string) (approval.Ask, error) {
		if a, ok, err := personagate.VersionAsk(rt.root, rt.Personas(), p, version); ok || err != nil {
			return a, err
		}
		return rt.node.VersionAsk(p, version, opts.By)
	})
}

// DecideOffline approves (or denies) target in the tool root's approvals
// file while no node serves the root (the CLI's 'agentos approve' when it
// finds no node): the next run of that version goes without asking.
// It fails with approval.ErrBusy when a node holds the file: ask the node.
// A recorded version (tools/x.ts@<hash>) with no request yet needs the
// node (its journal).
func DecideOffline(root string, cfg Config, target string, approve bool, opts ApproveOptions) (approval.Request, error) {
	st, err := approval.OpenStore(filepath.Join(root, ApprovalsFile), time.Second)
	if err != nil {
		return approval.Request{}, err
	}
	defer st.Close()
	jail, err := vfs.Open(root)
	if err != nil {
		return approval.Request{}, err
	}
	defer jail.Close()
	checker := check.New(cfg.CheckOptions())
	risk := func(p string, src []byte, _ string) kerneltools.Rating {
		return kerneltools.RatingOf(checker.Check(p, src))
	}
	g := approval.NewGate(st, cfg.Governance.Approval.Policy(), nil)
	personas := &persona.Store{Dir: cfg.Agents.Personas(), FS: jail}
	return g.DecideTarget(target, approve, opts.By, opts.Reason, func(p, version string) (approval.Ask, error) {
		if a, ok, err := personagate.VersionAsk(root, personas, p, version); ok || err != nil {
			return a, err
		}
		if version != "" {
			return approval.Ask{}, fmt.Errorf("%s@%s is a recorded version, read from the journal of a running node: start the node ('agentos serve') and approve it there", p, version)
		}
		resolved, err := jail.Resolve(p)
		if err != nil {
			return approval.Ask{}, err
		}
		src, err := jail.ReadFile(resolved)
		if err != nil {
			return approval.Ask{}, err
		}
		j, err := kerneltools.Judge(jail, cfg.Tools(), resolved, src, nil, nil, risk)
		if err != nil {
			return approval.Ask{}, err
		}
		return approval.Ask{Path: j.Path, Hash: j.Key, Source: j.Hash, Modules: j.Modules, Risk: string(j.Risk), Reasons: j.Reasons}, nil
	})
}

// ListOffline lists the approval requests in state from the tool root's
// approvals file while no node serves the root.
func ListOffline(root string, state approval.State) ([]approval.Request, error) {
	p := filepath.Join(root, ApprovalsFile)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	st, err := approval.OpenStore(p, time.Second)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.List(state)
}
