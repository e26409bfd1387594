package git

import (
	"errors"

	pb "github.com/agentos-run/agentos/actors/git/gitpb"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/vfs"
)

// failureCodes maps each sentinel error a Written can carry to its stable
// wire code, in the order failureOf tries them (the most specific first: a
// registry or repo error may wrap a vfs one). IMPORTANT: a code, once used,
// MUST keep its meaning: another node may be older.
var failureCodes = []struct {
	code string
	err  error
}{
	{"search_not_found", ErrSearchNotFound},
	{"empty_search", ErrEmptySearch},
	{"not_compiled", ErrNotCompiled},
	{"registry_persist", registry.ErrPersist},
	{"registry_closed", registry.ErrClosed},
	{"registry_scan", registry.ErrScan},
	{"registry_options", registry.ErrOptions},
	{"registry_not_registered", registry.ErrNotRegistered},
	{"registry_unavailable", registry.ErrUnavailable},
	{"conflict", repo.ErrConflict},
	{"rejected", repo.ErrRejected},
	{"upstream", repo.ErrUpstream},
	{"pull_request", repo.ErrPullRequest},
	{"repo_closed", repo.ErrClosed},
	{"repo_internal", repo.ErrInternal},
	{"repo_options", repo.ErrOptions},
	{"repo_path", repo.ErrPath},
	{"security", vfs.ErrSecurity},
	{"not_found", vfs.ErrNotFound},
	{"invalid_path", vfs.ErrInvalidPath},
}

// codeInternal is the code of an error that wraps none of failureCodes.
const codeInternal = "internal"

// failureOf returns err as a wire Failure; nil for nil.
func failureOf(err error) *pb.Failure {
	if err == nil {
		return nil
	}
	for _, c := range failureCodes {
		if errors.Is(err, c.err) {
			f := &pb.Failure{Code: c.code, Message: err.Error()}
			if ce := (*repo.ConflictError)(nil); errors.As(err, &ce) {
				f.Conflict = &pb.Conflict{Tool: ce.Tool, Paths: ce.Paths, Branch: ce.Branch, Base: ce.Base}
			}
			return f
		}
	}
	return &pb.Failure{Code: codeInternal, Message: err.Error()}
}

// errorOf returns the error a Failure stands for: its message, wrapping the
// sentinel its code names (errors.Is works); nil for nil.
func errorOf(f *pb.Failure) error {
	if f == nil {
		return nil
	}
	if c := f.GetConflict(); c != nil {
		// The typed error, so that errors.As finds the branch; it wraps
		// repo.ErrConflict.
		return &wireError{msg: f.GetMessage(), sentinel: &repo.ConflictError{Tool: c.GetTool(), Paths: c.GetPaths(), Branch: c.GetBranch(), Base: c.GetBase()}}
	}
	for _, c := range failureCodes {
		if c.code == f.GetCode() {
			return &wireError{msg: f.GetMessage(), sentinel: c.err}
		}
	}
	return &wireError{msg: f.GetMessage()}
}

// wireError is an error received as a Failure.
type wireError struct {
	msg      string
	sentinel error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.sentinel }

// writtenFromPB returns the domain Written and its error.
func writtenFromPB(p *pb.Written) (Written, error) {
	return Written{
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
