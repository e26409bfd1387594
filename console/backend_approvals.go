package console

import (
	"context"

	"github.com/agentos-run/agentos/governance/approval"
)

// ApprovalsBackend is what the Approvals pages read and change: the
// approval gate's requests (pending ones with the version's source and
// risk), a decision, and the decision log.
type ApprovalsBackend interface {
	// Approvals lists the requests in state ("" every state), oldest
	// first.
	Approvals(ctx context.Context, who Principal, state approval.State) ([]approval.Request, error)
	// Approval returns one request (by id) with its version's source; an
	// unknown id wraps ErrNotFound.
	Approval(ctx context.Context, who Principal, id string) (ApprovalDetail, error)
	// Decide approves (or denies) the request id with reason, as
	// 'agentos approve' does: the runs waiting on it go on (or end with
	// approval_denied). IMPORTANT: it MUST be refused (an error wrapping
	// ErrDenied) unless who holds the approve right on the request's tool
	// (capability.Approve, checked as the kernel checks it).
	Decide(ctx context.Context, who Principal, id string, approve bool, reason string) (approval.Request, error)
	// DecisionLog returns the approval log's events (requested, approved,
	// denied), newest first, skipping the first skip, at most limit; more
	// says older events remain.
	DecisionLog(ctx context.Context, who Principal, skip, limit int) (events []approval.Event, more bool, err error)
}

// ApprovalDetail is one request's page.
type ApprovalDetail struct {
	approval.Request
	// Source is the version's source (the entry's), "" when the node no
	// longer keeps it (SourceNote says why).
	Source     string
	SourceNote string
	// CanDecide says who holds the approve right on the tool: the page
	// offers the buttons only then (Decide checks again).
	CanDecide bool
}
