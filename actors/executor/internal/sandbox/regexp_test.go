package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dlclark/regexp2/v2"

	"github.com/agentos-run/agentos/transpile"
)

// freshProcessEnv marks the re-executed test binary of
// TestRegexpBoundedByNewEngine.
const freshProcessEnv = "AGENTOS_SANDBOX_FRESH_PROCESS"

// TestRegexpBoundedByNewEngine: importing the package leaves regexp2's
// process-wide match timeout alone (no init() side effect); NewEngine sets
// it (BoundRegexpBacktracking), so a catastrophically backtracking pattern
// in a tool gives up instead of running for hours. It runs in a fresh
// process (this test binary re-executed with only this test), because
// other tests of this binary may have made an Engine already.
func TestRegexpBoundedByNewEngine(t *testing.T) {
	if os.Getenv(freshProcessEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRegexpBoundedByNewEngine$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshProcessEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestRegexpBoundedByNewEngine") {
			t.Fatalf("the fresh process failed (%v):\n%s", err, out)
		}
		return
	}
	if regexp2.DefaultMatchTimeout == RegexpTimeout {
		t.Fatal("importing the package set regexp2.DefaultMatchTimeout: it must be set by an explicit call")
	}
	e := NewEngine(0, false)
	if regexp2.DefaultMatchTimeout != RegexpTimeout {
		t.Fatalf("after NewEngine, regexp2.DefaultMatchTimeout = %v, want %v", regexp2.DefaultMatchTimeout, RegexpTimeout)
	}
	// The lookahead forces goja's backtracking engine; the match gives up
	// (goja says "no match") long before the run's 10-minute deadline.
	out, err := transpile.Default().Transpile("tools/redos.ts", []byte("export default (a: { n: number }) => new RegExp('^(a+)+(?=b)$').test('a'.repeat(a.n) + 'c');\n"))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Entry: Module{Path: "tools/redos.ts", Hash: out.Hash, JS: out.JS}, Args: json.RawMessage(`{"n":40}`), Limits: Limits{Timeout: 10 * time.Minute}}
	if o := e.Run(context.Background(), job, nopBridge{}); o.Err != nil || string(o.Result) != "false" {
		t.Fatalf("catastrophic backtracking: result %s, error %+v", o.Result, o.Err)
	}
}
