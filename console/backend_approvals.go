package console

// ApprovalsBackend is what the Approvals pages read and change: pending
// requests, approve or deny, the decision log. Its methods are added with
// those pages (pages_approvals.go).
type ApprovalsBackend interface{}
