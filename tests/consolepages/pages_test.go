// Package consolepages_test tests the web console's Tools, Approvals, Processes
// and Cluster pages against a real node over HTTP on loopback.
package consolepages_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/kerneltools"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// riskyDouble is valid and runs, but check_tool rates it high risk: its
// runs wait at the approval gate.
const riskyDouble = `/** Doubles a number for the console's approval test. @ignore-security */
export default function double(args: { n: number }): number {
  return args.n * 2;
}
`

// node starts a node on a fresh root with its console on loopback.
func node(t *testing.T) (*host.Runtime, *httptest.Server) {
	t.Helper()
	return serveNode(t, host.Config{Root: t.TempDir(), Isolation: "inprocess", Logger: quiet})
}

// serveNode starts a node of cfg with its console on loopback; both are
// closed when the test ends.
func serveNode(t *testing.T, cfg host.Config) (*host.Runtime, *httptest.Server) {
	t.Helper()
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	s, err := rt.Console(console.Options{Addr: ts.Listener.Addr().String(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		s.Close()
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt, ts
}

// mint is a token of the node with grants.
func mint(rt *host.Runtime, holder string, grants ...capability.Grant) string {
	return rt.Kernel().Authority().Mint(holder, grants, capability.Caveats{}).Encode()
}

// browser is an HTTP client with a session of the console.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

// login logs in with tok.
func login(t *testing.T, ts *httptest.Server, tok string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, base: ts.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, err := b.c.PostForm(ts.URL+"/login", url.Values{"token": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return b
}

// get returns the page's status and body.
func (b *browser) get(p string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + p)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// post posts form (with the CSRF token of the page at from) to p.
func (b *browser) post(from, p string, form url.Values) (int, string) {
	b.t.Helper()
	_, page := b.get(from)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no CSRF token on %s", from)
	}
	form.Set("csrf", m[1])
	req, _ := http.NewRequest(http.MethodPost, b.base+p, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitingRun writes the high-risk tool and starts a run of it, which
// waits at the approval gate; it returns the request and the run's reply.
func waitingRun(t *testing.T, rt *host.Runtime) (approval.Request, chan json.RawMessage) {
	t.Helper()
	ctx := context.Background()
	args, _ := json.Marshal(map[string]string{"path": "tools/double.ts", "content": riskyDouble})
	if _, err := rt.Call(ctx, "write_file", args); err != nil {
		t.Fatal(err)
	}
	ch := make(chan json.RawMessage, 1)
	go func() {
		out, err := rt.Call(ctx, "exec_tool", json.RawMessage(`{"path": "tools/double.ts", "args": {"n": 21}}`))
		if err != nil {
			out, _ = json.Marshal(err.Error())
		}
		ch <- out
	}()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if rs, _ := rt.Approvals(approval.StatePending); len(rs) == 1 && rs[0].Waiting > 0 {
			return rs[0], ch
		}
	}
	t.Fatal("no run waits for its approval")
	return approval.Request{}, nil
}

// A token without the approve right on the tool sees the request and its
// source but cannot decide it: the page offers no form, and a decision
// posted anyway (with the session's CSRF token) is refused 403, the
// request stays pending and the run keeps waiting. A token with the right
// approves it and the run goes.
func TestApproveNeedsTheApproveRight(t *testing.T) {
	rt, ts := node(t)
	req, ch := waitingRun(t, rt)
	reader := login(t, ts, mint(rt, "reader", capability.Grant{Right: capability.Read, Scope: "tools/"}))
	code, page := reader.get("/approvals/" + req.ID)
	if code != http.StatusOK || !strings.Contains(page, "args.n * 2") || strings.Contains(page, `id="decide"`) || !strings.Contains(page, "does not grant") {
		t.Fatalf("the request's page for a token without approve: %d\n%s", code, page)
	}
	code, page = reader.post("/approvals/"+req.ID, "/approvals/"+req.ID+"/decide", url.Values{"decision": {"approve"}, "reason": {"sneaky"}})
	if code != http.StatusForbidden || !strings.Contains(page, "approve") {
		t.Fatalf("a decision without the approve right: %d\n%s", code, page)
	}
	if rs, _ := rt.Approvals(approval.StatePending); len(rs) != 1 || rs[0].Waiting != 1 {
		t.Fatalf("after a refused decision: %+v", rs)
	}
	// Out of scope: approve on another directory does not cover the tool.
	other := login(t, ts, mint(rt, "other", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/lib/"}))
	if code, _ := other.post("/approvals", "/approvals/"+req.ID+"/decide", url.Values{"decision": {"approve"}}); code != http.StatusForbidden {
		t.Fatalf("a decision with approve on another directory: %d", code)
	}

	approver := login(t, ts, mint(rt, "alice", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/"}))
	code, page = approver.post("/approvals/"+req.ID, "/approvals/"+req.ID+"/decide", url.Values{"decision": {"approve"}, "reason": {"looked at it"}})
	if code != http.StatusSeeOther {
		t.Fatalf("the approver's decision: %d\n%s", code, page)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(<-ch, &res); err != nil || !res.Success || string(res.Result.Result) != "42" {
		t.Fatalf("the approved run: %+v %v", res, err)
	}
	all, _ := rt.Approvals("")
	if len(all) != 1 || all[0].State != approval.StateApproved || all[0].DecidedBy != "console:alice" || all[0].Reason != "looked at it" {
		t.Fatalf("the recorded decision: %+v", all)
	}
	if code, page = approver.get("/approvals/" + req.ID + "?decided=1"); code != http.StatusOK || !strings.Contains(page, `id="decided"`) || !strings.Contains(page, `<span class="status approved" id="state">approved</span>`) {
		t.Errorf("the request's page after the decision: %d\n%s", code, page)
	}
	if _, page = approver.get("/approvals/log"); !strings.Contains(page, "console:alice") || !strings.Contains(page, "looked at it") {
		t.Errorf("the decision log does not show the decision:\n%s", page)
	}
}

// A denial needs a reason; the waiting run ends with it.
func TestDenyWithReason(t *testing.T) {
	rt, ts := node(t)
	req, ch := waitingRun(t, rt)
	b := login(t, ts, mint(rt, "bob", capability.Grant{Right: capability.Read, Scope: "tools/"}, capability.Grant{Right: capability.Approve, Scope: "tools/double.ts"}))
	if code, _ := b.post("/approvals/"+req.ID, "/approvals/"+req.ID+"/decide", url.Values{"decision": {"deny"}}); code != http.StatusBadRequest {
		t.Fatalf("a denial without a reason: %d", code)
	}
	if code, page := b.post("/approvals/"+req.ID, "/approvals/"+req.ID+"/decide", url.Values{"decision": {"deny"}, "reason": {"triples, not doubles"}}); code != http.StatusSeeOther {
		t.Fatalf("the denial: %d %s", code, page)
	}
	var res kerneltools.ExecResult
	if err := json.Unmarshal(<-ch, &res); err != nil || res.Success || res.Error == nil || string(res.Error.Kind) != approval.CodeDenied || !strings.Contains(res.Error.Message, "triples, not doubles") {
		t.Fatalf("the denied run: %+v %v", res, err)
	}
}
