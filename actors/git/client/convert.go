package client

import (
	"encoding/json"
	"errors"
	"fmt"

	pb "github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/git/repo"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/vfs"
)

// Conversions between the git actor's wire messages (gitpb) and the
// client's domain types: an error to its Failure (FailureOf, the actor's
// side) and back (errorOf), and a reply to Written or Synced.

// failureCodes maps each sentinel error a Written can carry to its stable
// wire code, in the order FailureOf tries them (the most specific first: a
// registry or repo error may wrap a vfs one). IMPORTANT: a code, once used,
// MUST keep its meaning: another node may be older.
var failureCodes = system.FailureCodes{
	{Code: "protected", Err: ErrProtected},
	{Code: system.CodeUnauthenticated, Err: system.ErrUnauthenticated},
	{Code: "denied", Err: capability.ErrDenied},
	{Code: "search_not_found", Err: ErrSearchNotFound},
	{Code: "empty_search", Err: ErrEmptySearch},
	{Code: "not_compiled", Err: ErrNotCompiled},
	{Code: "no_repo", Err: ErrNoRepo},
	{Code: "bad_commit", Err: ErrBadCommit},
	{Code: "commit_not_reached", Err: ErrCommitNotReached},
	{Code: "unavailable", Err: ErrUnavailable},
	{Code: "registry_persist", Err: regclient.ErrPersist},
	{Code: "registry_closed", Err: regclient.ErrClosed},
	{Code: "registry_scan", Err: regclient.ErrScan},
	{Code: "registry_options", Err: regclient.ErrOptions},
	{Code: "registry_not_registered", Err: regclient.ErrNotRegistered},
	{Code: "registry_unavailable", Err: regclient.ErrUnavailable},
	{Code: "conflict", Err: repo.ErrConflict},
	{Code: "rejected", Err: repo.ErrRejected},
	{Code: "fenced", Err: repo.ErrFenced},
	{Code: "upstream", Err: repo.ErrUpstream},
	{Code: "pull_request", Err: repo.ErrPullRequest},
	{Code: "repo_closed", Err: repo.ErrClosed},
	{Code: "repo_internal", Err: repo.ErrInternal},
	{Code: "repo_options", Err: repo.ErrOptions},
	{Code: "repo_path", Err: repo.ErrPath},
	{Code: "security", Err: vfs.ErrSecurity},
	{Code: "not_found", Err: vfs.ErrNotFound},
	{Code: "invalid_path", Err: vfs.ErrInvalidPath},
	{Code: "gate_blocked", Err: gate.ErrBlocked},
}

// FailureOf returns err as a wire Failure, the code naming the sentinel it
// wraps ("internal" for none); nil for nil. A conflict keeps its data
// (Failure.conflict). It is the git actor's side of the wire: the Client
// maps the Failure back to the same sentinel.
func FailureOf(err error) *pb.Failure {
	if err == nil {
		return nil
	}
	f := &pb.Failure{Code: failureCodes.CodeOf(err), Message: err.Error()}
	if ce := (*repo.ConflictError)(nil); errors.As(err, &ce) {
		f.Conflict = &pb.Conflict{Tool: ce.Tool, Paths: ce.Paths, Branch: ce.Branch, Base: ce.Base}
	}
	return f
}

// errorOf returns the error a Failure stands for: its message, wrapping the
// sentinel its code names (errors.Is works), or the *repo.ConflictError its
// conflict describes (errors.As works); nil for nil.
func errorOf(f *pb.Failure) error {
	if f == nil {
		return nil
	}
	var cause error
	if c := f.GetConflict(); c != nil {
		cause = &repo.ConflictError{Tool: c.GetTool(), Paths: c.GetPaths(), Branch: c.GetBranch(), Base: c.GetBase()}
	}
	return failureCodes.ErrorOf(f.GetCode(), f.GetMessage(), cause)
}

// writtenFromPB returns the domain Written and its error.
func writtenFromPB(p *pb.Written) (Written, error) {
	var rep *gate.Report
	if b := p.GetGate(); len(b) > 0 {
		rep = new(gate.Report)
		if err := json.Unmarshal(b, rep); err != nil {
			return Written{Path: p.GetPath()}, fmt.Errorf("%w: the gate report of %s does not decode: %v", ErrUnavailable, p.GetPath(), err)
		}
	}
	return Written{
		Gate:    rep,
		Path:    p.GetPath(),
		Bytes:   int(p.GetBytes()),
		Hash:    p.GetHash(),
		Created: p.GetCreated(),
		Commit:  p.GetCommit(),
		Branch:  p.GetBranch(),
		PRURL:   p.GetPrUrl(),
		Held:    p.GetHeld(),
	}, errorOf(p.GetFailure())
}

// syncedFromPB returns the domain Synced and its error.
func syncedFromPB(s *pb.Synced) (Synced, error) {
	return Synced{Commit: s.GetCommit(), Head: s.GetHead(), Changed: s.GetChanged(), Deleted: s.GetDeleted(), Registered: s.GetRegistered()}, errorOf(s.GetFailure())
}
