package repo

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// recoverInto is deferred at the package boundary (Hydrate, Persist, Close,
// InitBare, Verify) and in every goroutine this package starts: a panic
// from Git work (go-git or this package) becomes an error wrapping
// ErrInternal in *err instead of killing the process, and its stack is
// logged (log may be nil: the stack is then kept in the error).
//
// IMPORTANT: it MUST be deferred directly (defer recoverInto(...)), or
// recover returns nil.
func recoverInto(err *error, log *slog.Logger, op string) {
	v := recover()
	if v == nil {
		return
	}
	stack := debug.Stack()
	if log != nil {
		log.Error("git: recovered from a panic; the operation was aborted", slog.String("op", op), slog.Any("panic", v), slog.String("stack", string(stack)))
		*err = fmt.Errorf("%w: %s: %v (the stack is in the log)", ErrInternal, op, v)
		return
	}
	*err = fmt.Errorf("%w: %s: %v\n%s", ErrInternal, op, v, stack)
}
