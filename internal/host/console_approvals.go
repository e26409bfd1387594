package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/governance/approval"
)

// errGateOff answers the approval pages of a node whose approval gate is
// off and whose persona versions are not held.
var errGateOff = errors.New("agentos: the approval gate is off (governance.approval.off in agentos.json) and persona versions are not held (agents.approve_personas): nothing waits for an approval")

// Approvals implements console.ApprovalsBackend: the requests in state
// (tool versions' and persona versions'), as 'agentos approvals' lists
// them.
func (b *consoleBackend) Approvals(_ context.Context, who console.Principal, state approval.State) ([]approval.Request, error) {
	if _, err := b.proc(who); err != nil {
		return nil, err
	}
	switch state {
	case "", approval.StatePending, approval.StateApproved, approval.StateDenied:
	default:
		return nil, fmt.Errorf("%w: state %q: use pending, approved or denied (or none for every request)", console.ErrBadInput, state)
	}
	if b.rt.gate != nil {
		return b.rt.Approvals(state) // with the waiting runs
	}
	st, err := b.approvalStore()
	if st == nil || err != nil {
		return nil, err
	}
	return st.List(state)
}

// Approval implements console.ApprovalsBackend.
func (b *consoleBackend) Approval(_ context.Context, who console.Principal, id string) (console.ApprovalDetail, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.ApprovalDetail{}, err
	}
	r, err := b.request(id)
	if err != nil {
		return console.ApprovalDetail{}, err
	}
	d := console.ApprovalDetail{Request: r, CanDecide: p.Covers(capability.Approve, r.Path)}
	if live, lerr := b.rt.Approvals(r.State); lerr == nil {
		if i := slices.IndexFunc(live, func(x approval.Request) bool { return x.ID == r.ID }); i >= 0 {
			d.Waiting = live[i].Waiting
		}
	}
	entry := r.Hash
	if r.Source != "" {
		entry = r.Source
	}
	// The source is shown to who may read the tool, as read_file shows it.
	if !b.readable(p, r.Path) {
		d.SourceNote = "your token does not grant read on " + r.Path + ": its source is not shown"
		return d, nil
	}
	if src, note, ok := b.personaSource(r); ok {
		d.Source, d.SourceNote = src, note
		return d, nil
	}
	src, note := b.versionSource(r.Path, entry)
	d.Source, d.SourceNote = string(src), note
	return d, nil
}

// request returns the request id (a tool version's or a persona
// version's).
func (b *consoleBackend) request(id string) (approval.Request, error) {
	st, err := b.approvalStore()
	if err != nil {
		return approval.Request{}, err
	}
	if st == nil {
		return approval.Request{}, fmt.Errorf("%w: %w", console.ErrNotFound, errGateOff)
	}
	if !strings.HasPrefix(id, "a-") {
		return approval.Request{}, fmt.Errorf("%w: %q is not an approval request id (a-…)", console.ErrBadInput, id)
	}
	r, ok, err := st.Get(id)
	switch {
	case err != nil:
		return approval.Request{}, err
	case !ok:
		return approval.Request{}, fmt.Errorf("%w: no approval request %s (the Approvals page lists them)", console.ErrNotFound, id)
	}
	return r, nil
}

// Decide implements console.ApprovalsBackend: as 'agentos approve', by
// the principal, refused unless its process holds the approve right on the
// request's tool (checked, and a refusal logged, by the kernel's
// Process.Check).
func (b *consoleBackend) Decide(_ context.Context, who console.Principal, id string, approve bool, reason string) (approval.Request, error) {
	p, err := b.proc(who)
	if err != nil {
		return approval.Request{}, err
	}
	r, err := b.request(id)
	if err != nil {
		return approval.Request{}, err
	}
	reason = strings.TrimSpace(reason)
	if !approve && reason == "" {
		return approval.Request{}, fmt.Errorf("%w: a denial needs a reason: the waiting runs end with it", console.ErrBadInput)
	}
	if err := p.Check(capability.Approve, r.Path); err != nil {
		return approval.Request{}, fmt.Errorf("%w: %w; mint a token with 'agentos token --grant approve:%s' to decide it", console.ErrDenied, err, r.Path)
	}
	by := "console:" + who.Holder
	if who.Holder == "" {
		by = "console:" + who.ID
	}
	return b.rt.decide(r.ID, approve, ApproveOptions{By: by, Reason: reason})
}

// DecisionLog implements console.ApprovalsBackend.
func (b *consoleBackend) DecisionLog(_ context.Context, who console.Principal, skip, limit int) ([]approval.Event, bool, error) {
	if _, err := b.proc(who); err != nil {
		return nil, false, err
	}
	st, err := b.approvalStore()
	if st == nil || err != nil {
		return nil, false, err
	}
	evs, err := st.Log()
	if err != nil {
		return nil, false, err
	}
	slices.Reverse(evs) // newest first
	skip, limit = max(skip, 0), pageLimit(limit, 50)
	if skip >= len(evs) {
		return nil, false, nil
	}
	evs = evs[skip:]
	if len(evs) > limit {
		return evs[:limit], true, nil
	}
	return evs, false, nil
}
