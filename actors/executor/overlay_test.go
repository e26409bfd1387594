package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

const (
	overlayTool  = "export default function slug(s: string): string { return s.toLowerCase().replace(/ /g, '-'); }\n"
	overlayTests = "const slug = require('./slug').default;\nexport default function () { if (slug('A B') !== 'a-b') throw new Error('slug is wrong'); return 'passed'; }\n"
)

// overlayEnv is an executor actor on a tool root holding tools/fib.ts,
// and a token minter.
type overlayEnv struct {
	t    *testing.T
	root string
	sys  *actor.ActorSystem
	pid  *actor.PID
	auth *capability.Authority
}

func newOverlayEnv(t *testing.T, mode Isolation) *overlayEnv {
	t.Helper()
	e := newExec(t, mode, map[string]string{"tools/fib.ts": fibTool, "tools/.forge/disk.ts": "export default () => 'from disk';\n"})
	auth, err := capability.New(capability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sys := quietSystem()
	pid := sys.Root.Spawn(Props(e, ActorOptions{Authority: auth, RequireCaller: true}))
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })
	return &overlayEnv{t: t, root: e.opts.Root, sys: sys, pid: pid, auth: auth}
}

// run sends a Run of path with overlay, from this node (local) or from
// another, for a caller holding grants.
func (v *overlayEnv) run(local bool, path string, overlay map[string][]byte, grants ...capability.Grant) *pb.Ran {
	v.t.Helper()
	tok := v.auth.Mint("pid:1", grants, capability.Caveats{})
	var msg any = &pb.Run{RunKey: execclient.NewRunKey(), Path: path, Caller: callerToPB(&execclient.Caller{PID: 1, Holder: "pid:1", Token: tok}), Overlay: overlay}
	if local {
		msg = &system.Local{Msg: msg}
	}
	res, err := v.sys.Root.RequestFuture(v.pid, msg, time.Minute).Result()
	if err != nil {
		v.t.Fatal(err)
	}
	return res.(*pb.Ran)
}

var overlayGrants = []capability.Grant{{Right: capability.Exec, Scope: "tools/"}, {Right: capability.Read, Scope: "tools/"}}

// staged is the forge's staging of slug.ts and its tests.
func staged() map[string][]byte {
	return map[string][]byte{"tools/.forge/slug.ts": []byte(overlayTool), "tools/.forge/slug.test.ts": []byte(overlayTests)}
}

// TestOverlayRunsFromMemory: the forge's test run loads its entry and the
// candidate it requires from the Run's overlay, in both isolation modes,
// and nothing is written to the tool tree.
func TestOverlayRunsFromMemory(t *testing.T) {
	for _, mode := range []Isolation{IsolationInProcess, IsolationProcess} {
		t.Run(string(mode), func(t *testing.T) {
			v := newOverlayEnv(t, mode)
			r := v.run(true, "tools/.forge/slug.test.ts", staged(), overlayGrants...)
			if r.GetFailure() != nil || string(resultOf(r).Result) != `"passed"` {
				t.Fatalf("a local Run with the staged overlay: %v, want \"passed\"", r)
			}
			for _, p := range []string{"tools/.forge/slug.ts", "tools/.forge/slug.test.ts"} {
				if _, err := os.Stat(filepath.Join(v.root, filepath.FromSlash(p))); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s is on disk (%v): an overlay is never written", p, err)
				}
			}
		})
	}
}

// TestOverlayRefusals: an overlay is a way to run code without writing
// it, so it is refused from another node, outside the staging directory,
// over its bounds, and its modules load only with the caller's read right.
// Paths under the staging directory that it does not hold are read from
// the tool tree, as before.
func TestOverlayRefusals(t *testing.T) {
	v := newOverlayEnv(t, IsolationInProcess)
	refused := func(name string, r *pb.Ran, want string) {
		t.Helper()
		if r.GetFailure().GetCode() != "overlay" || !strings.Contains(r.GetFailure().GetMessage(), want) {
			t.Errorf("%s: %v, want failure overlay saying %q", name, r, want)
		}
	}
	refused("from another node", v.run(false, "tools/.forge/slug.test.ts", staged(), overlayGrants...), "another node's code never runs here")
	refused("a tool outside the staging directory", v.run(true, "tools/fib.ts", map[string][]byte{"tools/fib.ts": []byte("export default () => 1;\n")}, overlayGrants...), "not under the staging directory tools/.forge/")
	refused("a path climbing out of it", v.run(true, "tools/fib.ts", map[string][]byte{"tools/.forge/../fib.ts": []byte("export default () => 1;\n")}, overlayGrants...), "not under the staging directory")
	refused("the staging directory's parent's sibling", v.run(true, "tools/.forgery/x.ts", map[string][]byte{"tools/.forgery/x.ts": []byte("export default () => 1;\n")}, overlayGrants...), "not under the staging directory")
	big := staged()
	big["tools/.forge/slug.ts"] = make([]byte, MaxOverlayBytes+1)
	refused("a module over the bound", v.run(true, "tools/.forge/slug.test.ts", big, overlayGrants...), "over the 4194304 bytes")
	many := staged()
	for i := range MaxOverlayModules {
		many[fmt.Sprintf("tools/.forge/m%d.ts", i)] = []byte("export default 1;\n")
	}
	refused("too many modules", v.run(true, "tools/.forge/slug.test.ts", many, overlayGrants...), "at most 16")

	// The candidate loads only if the caller may read it.
	r := v.run(true, "tools/.forge/slug.test.ts", staged(), capability.Grant{Right: capability.Exec, Scope: "tools/"}, capability.Grant{Right: capability.Read, Scope: "tools/fib.ts"})
	if res := resultOf(r); r.GetFailure() != nil || res.Error == nil || !strings.Contains(res.Error.Message, "may not read tools/.forge/slug.ts") {
		t.Errorf("a candidate the caller may not read: %v, want a security error naming tools/.forge/slug.ts", r)
	}
	// A staged path the overlay does not hold is the tool tree's.
	disk := map[string][]byte{"tools/.forge/t.ts": []byte("const d = require('./disk').default;\nexport default () => d();\n")}
	if r := v.run(true, "tools/.forge/t.ts", disk, overlayGrants...); r.GetFailure() != nil || string(resultOf(r).Result) != `"from disk"` {
		t.Errorf("a staged module not in the overlay: %v, want the tool tree's (\"from disk\")", r)
	}
	if execclient.FailureCodes.CodeOf(execclient.ErrOverlay) != "overlay" {
		t.Errorf("ErrOverlay crosses as %q, want overlay", execclient.FailureCodes.CodeOf(execclient.ErrOverlay))
	}
}
