package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

// Issue 11, item 10: `await new Promise(r => setTimeout(r, 10))` failed
// with "ReferenceError: setTimeout is not defined".
const timersTool = `/** Timers on the journaled clock. */
export default async function (args: { ms: number }) {
  const order: string[] = [];
  const t0 = Date.now();
  await new Promise(r => setTimeout(r, args.ms));
  const slept = Date.now() - t0;
  setTimeout(() => order.push('a30'), 30);
  setTimeout((x: string) => order.push(x), 10, 'b10');
  setTimeout(() => order.push('c10'), 10);
  setTimeout(() => order.push('d0'), 0);
  const never = setTimeout(() => order.push('never'), 5);
  clearTimeout(never);
  let ticks = 0;
  await new Promise<void>(done => {
    const iv = setInterval(() => {
      ticks++;
      order.push('tick' + ticks);
      if (ticks === 3) { clearInterval(iv); done(); }
    }, 15);
  });
  setTimeout(() => tgp.log('late', Date.now() - t0 >= args.ms), 5); // keeps the run alive after return
  return { slept: slept >= args.ms, order, at: new Date().toISOString() };
}
`

func TestTimersFireOnTheJournaledClock(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/time/wait.ts": timersTool})
		r := run(t, e, "tools/time/wait.ts", `{"ms": 20}`)
		if !r.Success {
			t.Fatalf("%+v", r.Error)
		}
		var out struct {
			Slept bool
			Order []string
		}
		if err := json.Unmarshal(r.Result, &out); err != nil {
			t.Fatal(err)
		}
		// The timeouts are all set at the same clock reading: d0 (clamped
		// to 1 ms), then b10 and c10 in creation order, then the interval's
		// ticks and a30 as the clock says.
		if !out.Slept || len(out.Order) != 7 || !reflect.DeepEqual(out.Order[:3], []string{"d0", "b10", "c10"}) || !strings.Contains(strings.Join(out.Order, ","), "tick3") {
			t.Fatalf("result %s", r.Result)
		}
		if !reflect.DeepEqual(r.Logs, []string{"late true"}) {
			t.Fatalf("a timer pending at return must still fire: logs %q", r.Logs)
		}
	})
}

// TestTimersReplayIdentically: a recorded run replayed from the journal
// fires the same timers in the same order and reads the same Date values,
// without waiting.
func TestTimersReplayIdentically(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		e := newExec(t, mode, map[string]string{"tools/time/wait.ts": timersTool})
		rec, err := j.Begin(journal.RunMeta{Tool: "tools/time/wait.ts", Args: json.RawMessage(`{"ms": 20}`)})
		if err != nil {
			t.Fatal(err)
		}
		live := e.Exec(context.Background(), Request{Path: "tools/time/wait.ts", Args: json.RawMessage(`{"ms": 20}`), Middleware: []driver.Middleware{rec.Middleware()}})
		if !live.Success {
			t.Fatalf("%+v", live.Error)
		}
		if err := rec.End("ok", live.Result, nil); err != nil {
			t.Fatal(err)
		}
		entries, err := j.Entries(rec.ID())
		if err != nil {
			t.Fatal(err)
		}
		sleeps := 0
		for _, en := range entries {
			if en.Driver == "clock" && en.Op == "sleep" {
				sleeps++
			}
		}
		if sleeps == 0 {
			t.Fatalf("no clock.sleep was journaled: %+v", entries)
		}
		for range 3 {
			rp, err := j.Replayer(rec.ID())
			if err != nil {
				t.Fatal(err)
			}
			again := e.Exec(context.Background(), Request{Path: "tools/time/wait.ts", Args: json.RawMessage(`{"ms": 20}`), Middleware: []driver.Middleware{rp.Middleware()}})
			if !again.Success || string(again.Result) != string(live.Result) || !reflect.DeepEqual(again.Logs, live.Logs) || again.Calls != live.Calls {
				t.Fatalf("replay differs:\n live %s %q %d\n replay %s %q %d %+v", live.Result, live.Logs, live.Calls, again.Result, again.Logs, again.Calls, again.Error)
			}
		}
	})
}

// TestEndlessIntervalEndsAtTheTimeout: an interval never cleared keeps the
// run alive until its timeout, which says so; a timer callback that throws
// fails the run with its exception; setTimeout("code") is refused.
func TestEndlessIntervalEndsAtTheTimeout(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{
			"tools/iv.ts":    "export default () => { setInterval(() => {}, 10); return 1; };\n",
			"tools/throw.ts": "export default () => new Promise(r => setTimeout(() => { throw new Error('late boom'); }, 5));\n",
			"tools/code.ts":  "export default () => { setTimeout('tgp.log(1)' as any, 5); };\n",
		})
		wantKind(t, run(t, e, "tools/throw.ts", `{}`), "exception", "Error: late boom")
		wantKind(t, run(t, e, "tools/code.ts", `{}`), "exception", "TypeError: setTimeout: the first argument must be a function")
		// (after those: a worker's first run, cold, can take most of a short
		// limit under -race)
		r := e.Exec(context.Background(), Request{Path: "tools/iv.ts", Limits: Limits{Timeout: 500 * time.Millisecond}})
		wantKind(t, r, "timeout", "1 interval(s) still running kept it alive")
	})
}

// TestCheckKnowsTheSandboxGlobals keeps check_tool and the sandbox in sync:
// the globals check.SandboxGlobals lists are exactly those a tool finds on
// globalThis, so none that check flags as missing (check.MissingGlobals)
// exists, and a global added to or removed from the sandbox fails this test
// until the checker agrees.
func TestCheckKnowsTheSandboxGlobals(t *testing.T) {
	forModes(t, func(t *testing.T, mode Isolation) {
		e := newExec(t, mode, map[string]string{"tools/globals.ts": "export default () => Object.getOwnPropertyNames(globalThis).sort();\n"})
		r := run(t, e, "tools/globals.ts", `{}`)
		var got []string
		if err := json.Unmarshal(r.Result, &got); err != nil || !r.Success {
			t.Fatalf("%s %+v", r.Result, r.Error)
		}
		if !reflect.DeepEqual(got, check.SandboxGlobals) {
			t.Fatalf("the sandbox's globals differ from check.SandboxGlobals:\n sandbox %q\n check   %q", got, check.SandboxGlobals)
		}
		for name := range check.MissingGlobals {
			if slices.Contains(got, name) {
				t.Errorf("check flags %s as missing, but the sandbox has it", name)
			}
		}
	})
}
