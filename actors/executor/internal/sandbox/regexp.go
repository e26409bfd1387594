package sandbox

// The process-wide bound on regular-expression backtracking.

import (
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// RegexpTimeout bounds one regular-expression match in the backtracking
// engine goja uses for patterns Go's linear-time engine cannot run.
const RegexpTimeout = 250 * time.Millisecond

// BoundRegexpBacktracking sets regexp2.DefaultMatchTimeout to RegexpTimeout.
//
// Why: goja runs the patterns Go's linear-time regexp package cannot
// (lookarounds, backreferences) with regexp2, a backtracking engine; a
// tool's /^(a+)+(?=b)$/ on a long near-match would otherwise run for hours,
// out of reach of the run's interrupt (a native call). With the timeout
// the match gives up (goja reports "no match") and the run goes on.
//
// What it affects: IMPORTANT: regexp2 has no per-runtime setting, so this
// is process-wide: every regexp2.Regexp compiled afterwards in this process
// (every goja runtime's, and any other user of regexp2) gets the timeout;
// those compiled before keep theirs. It is idempotent and called from one
// place, NewEngine, before the Engine makes any runtime: every run (the
// executor's in-process mode and its worker processes) goes through an
// Engine. It used to be an init(): importing the package changed regexp2
// for the whole process.
func BoundRegexpBacktracking() {
	boundRegexp.Do(func() { regexp2.DefaultMatchTimeout = RegexpTimeout })
}

var boundRegexp sync.Once
