package consolepages_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

// chrome is a headless Chromium for one test, or a skip saying what to
// install.
func chrome(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("AGENTOS_CHROMIUM")
	if path == "" {
		for _, p := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if found, err := exec.LookPath(p); err == nil {
				path = found
				break
			}
		}
	}
	if path == "" {
		t.Skip("no Chromium: install Debian's chromium (as .ci/run does) or set AGENTOS_CHROMIUM to a Chrome binary to run the console's browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("Chromium at %s does not start: %v", path, err)
	}
	return ctx
}

// browse runs steps in the browser, failing the test on an error.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// textOf is the text of the element sel.
func textOf(t *testing.T, ctx context.Context, sel chromedp.CSS) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("the text of %s: %v", sel, err)
	}
	return s
}

// loginIn logs the browser in with tok, as a user pastes it.
func loginIn(base, tok string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), tok),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("header nav")),
	)
}

// shot saves the page as docs/console/NAME.png when AGENTOS_SCREENSHOTS=1.
func shot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if os.Getenv("AGENTOS_SCREENSHOTS") != "1" {
			return chromedp.Void{}, nil
		}
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return chromedp.Void{}, err
		}
		dir := filepath.Join("..", "..", "docs", "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	}
}

// In a real browser: a run waits for the approval of a high-risk tool
// version; the user finds the request on the Approvals page (keyboard
// reachable links), reads the source, approves it with a reason; the
// waiting run finishes with the approved version's result, and the
// decision log shows the decision.
func TestBrowserApprovalLetsTheRunGo(t *testing.T) {
	ctx := chrome(t)
	rt, ts := node(t)
	req, ch := waitingRun(t, rt)
	tok := mint(rt, "alice", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/"})
	browse(t, ctx, "the pending approvals", loginIn(ts.URL, tok), chromedp.Navigate(ts.URL+"/approvals"), chromedp.WaitVisible(chromedp.CSS("#approvals")), shot("approvals"))
	list := textOf(t, ctx, "#approvals")
	if !strings.Contains(list, req.ID) || !strings.Contains(list, "tools/double.ts") || !strings.Contains(list, "high") {
		t.Fatalf("the Approvals page lists:\n%s", list)
	}
	browse(t, ctx, "the request's page",
		chromedp.Click(chromedp.CSS("#req-"+req.ID+" a")),
		chromedp.WaitVisible(chromedp.CSS("#decide")),
		shot("approval"),
	)
	src := textOf(t, ctx, "#source")
	if !strings.Contains(src, "args.n * 2") {
		t.Fatalf("the request's page shows the source:\n%s", src)
	}
	select {
	case out := <-ch:
		t.Fatalf("the run did not wait for the approval: %s", out)
	default:
	}
	browse(t, ctx, "approving",
		chromedp.SendKeys(chromedp.CSS("#reason"), "read it: it only doubles"),
		chromedp.Click(chromedp.CSS("#approve")),
		chromedp.WaitVisible(chromedp.CSS("#decided")),
	)
	if got := textOf(t, ctx, "#decided"); !strings.Contains(got, "Approved by console:alice: read it: it only doubles") {
		t.Fatalf("the request's page after approving says %q", got)
	}
	select {
	case out := <-ch:
		var res kerneltools.ExecResult
		if err := json.Unmarshal(out, &res); err != nil || !res.Success || string(res.Result.Result) != "42" {
			t.Fatalf("the approved run: %s", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting run did not go on after the approval in the page")
	}
	browse(t, ctx, "the decision log", chromedp.Navigate(ts.URL+"/approvals/log"), chromedp.WaitVisible(chromedp.CSS("#log")), shot("approvals-log"))
	log := textOf(t, ctx, "#log")
	if !strings.Contains(log, "approved") || !strings.Contains(log, "console:alice") || !strings.Contains(log, "read it: it only doubles") {
		t.Fatalf("the decision log:\n%s", log)
	}
}

// In a real browser: the Tools page finds a tool by search, its page
// shows its versions and the diff of the newest against the one before.
func TestBrowserToolsSearchAndDiff(t *testing.T) {
	ctx := chrome(t)
	rt, ts := node(t)
	greetTwoVersions(t, rt)
	tok := mint(rt, "reader", capability.Grant{Right: capability.Read, Scope: "tools/"})
	browse(t, ctx, "searching the tools",
		loginIn(ts.URL, tok),
		chromedp.Navigate(ts.URL+"/tools"),
		chromedp.SendKeys(chromedp.CSS("#tool-query"), "greet someone politely\n"),
		chromedp.WaitVisible(chromedp.CSS("#hits")),
		shot("tools"),
	)
	hits := textOf(t, ctx, "#hits")
	if !strings.Contains(hits, "tools/people/greet.ts") {
		t.Fatalf("the search found:\n%s", hits)
	}
	browse(t, ctx, "the tool's page",
		chromedp.Click(chromedp.CSS(`#hits a[href="/tools/tools/people/greet.ts"]`)),
		chromedp.WaitVisible(chromedp.CSS("#diff")),
		shot("tool"),
	)
	added, removed, versions := textOf(t, ctx, "#diff tr.add"), textOf(t, ctx, "#diff tr.del"), textOf(t, ctx, "table.versions")
	if !strings.Contains(added, `"Good day, "`) || !strings.Contains(removed, `"Hello, "`) || !strings.Contains(versions, "current") {
		t.Fatalf("the diff: +%q -%q; versions:\n%s", added, removed, versions)
	}
}

// In a real browser: the Processes page shows the process tree.
func TestBrowserProcessTree(t *testing.T) {
	ctx := chrome(t)
	rt, ts := node(t)
	tok := mint(rt, "ops", capability.Grant{Right: capability.Read, Scope: "tools/"})
	browse(t, ctx, "the process tree", loginIn(ts.URL, tok), chromedp.Navigate(ts.URL+"/procs"), chromedp.WaitVisible(chromedp.CSS("#procs")), shot("procs"))
	tree := textOf(t, ctx, "#procs")
	// The default process and this session's own process (image console).
	if !strings.Contains(tree, rt.Agent().Name()) || !strings.Contains(tree, "console") {
		t.Fatalf("the process tree:\n%s", tree)
	}
}

// In a real browser, against a cluster of two node processes: the Cluster
// page lists both members with their versions and what they host, this
// node marked; a member's "processes" link opens the process tree of that
// member process, asked of its kernel with the session's token.
func TestBrowserClusterPage(t *testing.T) {
	ctx := chrome(t)
	rt, ts, mp := clusterOfTwo(t)
	hash, other := forgeSomewhere(t, rt), mp.addr
	tok := mint(rt, "ops", capability.Grant{Right: capability.Read})
	browse(t, ctx, "the Cluster page", loginIn(ts.URL, tok), chromedp.Navigate(ts.URL+"/cluster"), chromedp.WaitVisible(chromedp.CSS("#members")), shot("cluster"))
	self := textOf(t, ctx, chromedp.CSS(`#members tr[data-node="`+rt.Member().Address()+`"]`))
	remote := textOf(t, ctx, chromedp.CSS(`#members tr[data-node="`+other+`"]`))
	if !strings.Contains(self, "this node") || strings.Contains(remote, "this node") {
		t.Errorf("this node's row %q, the other member's %q", self, remote)
	}
	for _, row := range []string{self, remote} {
		if !strings.Contains(row, host.NodeVersion()) || !strings.Contains(row, forge.GrainKind) || strings.Contains(row, "did not answer") {
			t.Errorf("a member's row: %q", row)
		}
	}
	if !strings.Contains(self+remote, hash[:12]) {
		t.Errorf("no member shows the forge in flight %s:\n%s\n%s", hash[:12], self, remote)
	}
	browse(t, ctx, "the other member's processes",
		chromedp.Click(chromedp.CSS(`#members tr[data-node="`+other+`"] a.procs`)),
		chromedp.WaitVisible(chromedp.CSS("#procs")),
	)
	if h := textOf(t, ctx, "h1"); !strings.Contains(h, "Processes on "+other) {
		t.Errorf("the heading: %q", h)
	}
	if tree := textOf(t, ctx, "#procs"); !strings.Contains(tree, memberWorker) {
		t.Errorf("the member process's tree:\n%s", tree)
	}
}
