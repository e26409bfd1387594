// Package lazyre compiles a package-level regular expression on first use
// rather than at package initialisation.
//
// Every start of the agentos binary, including `agentos help` and each
// sandbox worker (the binary re-executed), runs the initialisation of every
// package linked in. A regexp.MustCompile in a package-level var is paid
// there whether or not the process ever matches it; with lazyre it is paid
// by the first match.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns
// the same *regexp.Regexp on every call, safe for concurrent use.
//
// IMPORTANT: like regexp.MustCompile it panics if expr does not compile,
// but at the first call instead of at start: a package MUST have a test
// that reaches each of its expressions (a bad literal is a programming
// error).
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
