package system

import "errors"

// Errors cross between actors, and between nodes, as data: a stable code
// and the error's text (each actor's .proto has a Failure{code, message}
// message). FailureCodes is an actor's table from its sentinel errors to
// those codes and back, so that errors.Is (and errors.As, for a typed
// error rebuilt from the failure's data) works on what a client returns.

// CodeInternal is the code of an error that wraps none of a table's
// sentinels.
const CodeInternal = "internal"

// FailureCode pairs a stable wire code with the sentinel error it names.
type FailureCode struct {
	Code string
	Err  error
}

// FailureCodes is an actor's table of the sentinel errors its replies can
// carry. Order matters: CodeOf returns the first sentinel an error wraps, so
// list the most specific first (an error may wrap several). IMPORTANT: a
// code, once used, MUST keep its meaning: another node may be older.
type FailureCodes []FailureCode

// CodeOf returns the code of the first sentinel err wraps (errors.Is), in
// table order; CodeInternal when it wraps none.
func (t FailureCodes) CodeOf(err error) string {
	for _, c := range t {
		if errors.Is(err, c.Err) {
			return c.Code
		}
	}
	return CodeInternal
}

// ErrorOf returns the error a failure (code, message) stands for: a
// *RemoteError whose text is message and which wraps cause when cause is
// not nil (a typed error the caller rebuilt from the failure's data, e.g.
// a *capability.QuotaError), else the sentinel the table names for code
// (nothing for an unknown code or CodeInternal).
func (t FailureCodes) ErrorOf(code, message string, cause error) error {
	if cause == nil {
		for _, c := range t {
			if c.Code == code {
				cause = c.Err
				break
			}
		}
	}
	return &RemoteError{Code: code, Message: message, cause: cause}
}

// RemoteError is an error received from an actor as a failure: its text is
// the original error's, and errors.Is / errors.As reach the sentinel (or
// the typed error) its code names.
type RemoteError struct {
	// Code is the failure's stable code.
	Code string
	// Message is the original error's text.
	Message string
	cause   error
}

func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns the sentinel error (or typed error) of Code; nil for
// CodeInternal or an unknown code.
func (e *RemoteError) Unwrap() error { return e.cause }
