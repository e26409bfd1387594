package sandbox

import "fmt"

// Kind classifies why a run failed. Kinds are stable strings: callers match
// on them, and they appear in JSON results.
type Kind string

// The kinds of failure.
const (
	KindException   Kind = "exception"         // the tool threw (or rejected) and did not catch it
	KindTimeout     Kind = "timeout"           // the run exceeded its wall-clock limit
	KindMemory      Kind = "memory_limit"      // the run exceeded its memory limit
	KindStack       Kind = "stack_overflow"    // the run exceeded its call-stack depth
	KindOutput      Kind = "output_too_large"  // result plus logs exceeded the output limit
	KindCompile     Kind = "compile_error"     // the tool (or a module it requires) does not compile
	KindNotFound    Kind = "not_found"         // the tool file does not exist
	KindSecurity    Kind = "security"          // the path or an import was refused
	KindInvalidArgs Kind = "invalid_args"      // args is not a JSON object, or does not match the declared parameter types
	KindNoExport    Kind = "no_default_export" // the module has no default export function
	KindCancelled   Kind = "cancelled"         // the caller's context ended the run
	KindCrash       Kind = "crash"             // the worker process died for another reason
	KindInternal    Kind = "internal"          // a bug in agentos; the message says where
	KindUnsettled   Kind = "unsettled"         // the tool's promise can never settle
	KindHostFailure Kind = "host_failure"      // the Host (e.g. the journal) aborted the run
)

// Error is why a run failed: a kind, a message that says what to do, and the
// tool's stack (TypeScript lines where the source map allows) when there is
// one. Code carries a driver error code (see package driver) when the
// uncaught exception came from a bridge call.
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
	Code    string `json:"code,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Kind, e.Message) }

// Is makes errors.Is(err, &Error{Kind: k}) match any error of kind k.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && t.Message == ""
}

func errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}
