package console

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
)

// chromium is Debian's Chromium, the browser the tests drive.
const chromium = "/usr/bin/chromium"

// The one browser of the test binary, started on first use.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserDir    string
)

// browser returns a new isolated browser context (its own cookies) of the
// binary's one headless Chromium; it skips the test when Chromium is not
// installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium
	if _, err := os.Stat(path); err != nil {
		if path, err = exec.LookPath("chromium"); err != nil {
			t.Skip("the browser tests need Chromium: install it with 'apt-get install chromium'")
		}
	}
	browserOnce.Do(func() {
		browserDir, _ = os.MkdirTemp("", "agentos-chromium-")
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.UserDataDir(browserDir),
			chromedp.WindowSize(1280, 900))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		if err := chromedp.Do(ctx); err != nil { // starts the browser
			cancel()
			cancelAlloc()
			return
		}
		browserCtx, browserCancel = ctx, func() { cancel(); cancelAlloc() }
	})
	if browserCtx == nil {
		t.Fatalf("Chromium (%s) did not start", path)
	}
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel() })
	return ctx
}

func stopBrowser() {
	if browserCancel != nil {
		browserCancel()
	}
	if browserDir != "" {
		os.RemoveAll(browserDir)
	}
}

// screenshot saves the page as docs/console/name.png when
// AGENTOS_SCREENSHOTS=1 (normal runs write nothing).
func screenshot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if os.Getenv("AGENTOS_SCREENSHOTS") != "1" {
			return chromedp.Void{}, nil
		}
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644)
	}
}

// text is the text of the element sel. A page that replaces the element
// between the query of its node and the read of its text (a navigation
// ending, a live update) is asked again: the browser answers "No node with
// given id found" for the node it just named.
func text(t *testing.T, ctx context.Context, sel chromedp.CSS) string {
	t.Helper()
	var err error
	for range 5 {
		var s string
		if s, err = chromedp.Run(ctx, chromedp.Text(sel)); err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "No node with given id") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the text of %s: %v", sel, err)
	return ""
}

// do runs steps, failing the test on an error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// browserLogin logs the browser in with tok through the login page.
func browserLogin(n *node, tok string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(n.url+"/runs"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SetValue(chromedp.CSS(`#token`), tok),
		chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs`)),
	)
}

// TestBrowserListShowsRecentRun: a run recorded a moment before is listed;
// one recorded while the page is open appears live.
func TestBrowserListShowsRecentRun(t *testing.T) {
	ctx := browser(t)
	n := startNode(t, console.Options{})
	first := n.record(t)
	do(t, ctx, browserLogin(n, n.token("tools/", capability.Read)))
	if got := text(t, ctx, `#runs`); !strings.Contains(got, first) || !strings.Contains(got, toolPath) {
		t.Fatalf("the list does not show run %s:\n%s", first, got)
	}
	second := n.record(t)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`tr[id="run-`+second+`"]`)), screenshot("runs")); err != nil {
		t.Fatalf("run %s recorded while the page was open did not appear: %v", second, err)
	}
	do(t, ctx, chromedp.Navigate(n.url+"/runs/"+first), chromedp.WaitVisible(chromedp.CSS(`.timeline`)), screenshot("run"))
	got := text(t, ctx, `main`)
	m, err := n.rt.Journal().Get(first)
	if err != nil || len(m.TraceID) != 32 {
		t.Fatalf("run %s has trace id %q (%v): the node's tracer gave it one", first, m.TraceID, err)
	}
	if got := text(t, ctx, `#trace-id`); got != m.TraceID {
		t.Errorf("the run page's trace id is %q, want the journal's %q", got, m.TraceID)
	}
	if got := text(t, ctx, `#logs`); !strings.Contains(got, "basket of 2 items") {
		t.Errorf("the run page's logs are %q, want the line the tool logged", got)
	}
	for _, want := range []string{"fetch.", "01.502.25", "agentos trace " + first, toolPath} {
		if !strings.Contains(got, want) {
			t.Errorf("the run page does not show %q:\n%s", want, got)
		}
	}
}

// TestBrowserFixABadTool is the console's headline: a tool gives a wrong
// answer; the user finds its run, replays it against a fix pasted in the
// page, sees a divergence (a "fix" that asks for more than the run did),
// then the new result of the real fix, and saves it.
func TestBrowserFixABadTool(t *testing.T) {
	ctx := browser(t)
	n := startNode(t, console.Options{})
	id := n.record(t)
	do(t, ctx,
		browserLogin(n, n.token("tools/", capability.Read, capability.Exec, capability.Write)),
		chromedp.Click(chromedp.CSS(`tr[id="run-`+id+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`a.button`)),
		chromedp.Click(chromedp.CSS(`a.button`)),
		chromedp.WaitVisible(chromedp.CSS(`#source`)),
		chromedp.SetValue(chromedp.CSS(`#source`), chatty),
		chromedp.Click(chromedp.CSS(`input[value=edited]`)),
		chromedp.Click(chromedp.CSS(`#replay`)),
		chromedp.WaitVisible(chromedp.CSS(`#divergence`)),
		screenshot("divergence"),
	)
	if d := text(t, ctx, `#divergence`); !strings.Contains(d, "[") || !strings.Contains(d, "fetch") {
		t.Errorf("divergence shown: %q, want its stable code and the calls", d)
	}
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#source`), fixed),
		chromedp.Click(chromedp.CSS(`input[value=edited]`)),
		chromedp.Click(chromedp.CSS(`#replay`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#divergence`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-result`)),
		screenshot("replay"),
	)
	if old, now := text(t, ctx, `#old-result`), text(t, ctx, `#new-result`); !strings.Contains(old, "01.502.25") || strings.TrimSpace(now) != "3.75" {
		t.Errorf("old result %q, new result %q: want the bug and 3.75", old, now)
	}
	if rec, rep := text(t, ctx, `#recorded-logs`), text(t, ctx, `#replay-logs`); !strings.Contains(rec, "basket of 2 items") || strings.Contains(rep, "basket") {
		t.Errorf("recorded logs %q, replay logs %q: want the recorded run's line beside the fix's (none)", rec, rep)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`#save`)), chromedp.WaitVisible(chromedp.CSS(`#saved`)))
	if saved := text(t, ctx, `#saved`); !strings.Contains(saved, toolPath) {
		t.Errorf("saved: %q", saved)
	}
	if b, err := os.ReadFile(filepath.Join(n.rt.Root(), toolPath)); err != nil || string(b) != fixed {
		t.Errorf("the tool after the save: %q %v", b, err)
	}
}

// TestBrowserRefusals: without a token the browser gets the login page;
// a form whose CSRF token is removed is refused.
func TestBrowserRefusals(t *testing.T) {
	ctx := browser(t)
	n := startNode(t, console.Options{})
	id := n.record(t)
	do(t, ctx, chromedp.Navigate(n.url+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`#token`)), screenshot("login"))
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.Contains(loc, "/login") {
		t.Errorf("without a token the browser is at %s (%v), want the login page", loc, err)
	}
	do(t, ctx,
		browserLogin(n, n.token("tools/", capability.Read, capability.Exec)),
		chromedp.Navigate(n.url+"/runs/"+id+"/debug"),
		chromedp.WaitVisible(chromedp.CSS(`#replay`)),
	)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('form.debug input[name=csrf]').remove() === undefined`)); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`#replay`)), chromedp.WaitVisible(chromedp.CSS(`p.error`)))
	if got := text(t, ctx, `main`); !strings.Contains(got, "403") || !strings.Contains(got, "CSRF") {
		t.Errorf("a replay without the CSRF token: %q, want 403 naming the CSRF token", got)
	}
}
