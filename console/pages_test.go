package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/governance/gate"
)

// The Tools, Approvals and Processes backends of security_test.go's
// fakeBackend: nothing to show.

func (f *fakeBackend) SearchTools(context.Context, Principal, string, int) ([]ToolHit, error) {
	return nil, nil
}
func (f *fakeBackend) Tools(context.Context, Principal, string, int) (ToolPage, error) {
	return ToolPage{}, nil
}
func (f *fakeBackend) Tool(_ context.Context, _ Principal, p string) (ToolDetail, error) {
	return ToolDetail{}, fmt.Errorf("%w: no tool %s", ErrNotFound, p)
}
func (f *fakeBackend) ToolVersion(context.Context, Principal, string, string, string, string, int) (ToolVersionDetail, error) {
	return ToolVersionDetail{}, ErrNotFound
}
func (f *fakeBackend) Approvals(context.Context, Principal, approval.State) ([]approval.Request, error) {
	return nil, nil
}
func (f *fakeBackend) Approval(_ context.Context, _ Principal, id string) (ApprovalDetail, error) {
	return ApprovalDetail{Request: approval.Request{ID: id, Path: "tools/x.ts", State: approval.StatePending}}, nil
}
func (f *fakeBackend) Decide(context.Context, Principal, string, bool, string) (approval.Request, error) {
	return approval.Request{}, nil
}
func (f *fakeBackend) DecisionLog(context.Context, Principal, int, int) ([]approval.Event, bool, error) {
	return nil, false, nil
}
func (f *fakeBackend) Processes(context.Context, Principal, string) ([]Proc, error) { return nil, nil }
func (f *fakeBackend) Events(context.Context, Principal, string, uint64, int) ([]ProcEvent, error) {
	return nil, nil
}
func (f *fakeBackend) Cluster(context.Context, Principal) (ClusterView, error) {
	return ClusterView{}, nil
}

// decideBackend records the decisions that reach it, and refuses them
// all when deny is set (as the host refuses a token without the approve
// right).
type decideBackend struct {
	fakeBackend
	deny    bool
	mu      sync.Mutex
	decided []string
}

func (d *decideBackend) Decide(_ context.Context, _ Principal, id string, approve bool, reason string) (approval.Request, error) {
	if d.deny {
		return approval.Request{}, fmt.Errorf("%w: capability: denied: no approve right on tools/x.ts", ErrDenied)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decided = append(d.decided, fmt.Sprintf("%s %v %s", id, approve, reason))
	return approval.Request{ID: id}, nil
}

// postDecide posts a decision with form on c's session.
func postDecide(t *testing.T, c *http.Client, base string, form url.Values) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/approvals/a-0123456789ab/decide", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestDecideNeedsCSRF: a decision posted without the session's CSRF
// token (or with a wrong one, or without a session) never reaches the
// backend; with it, it does and the page redirects to the request.
func TestDecideNeedsCSRF(t *testing.T) {
	b := &decideBackend{}
	ts := newTestConsole(t, b, Options{})
	if resp := postDecide(t, noRedirect(nil), ts.URL, url.Values{"decision": {"approve"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("decision without a session: %d, want 401", resp.StatusCode)
	}
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	csrf := login(t, ts, c)
	for _, form := range []url.Values{
		{"decision": {"approve"}, "reason": {"ok"}},
		{"decision": {"approve"}, "reason": {"ok"}, "csrf": {"not-the-token"}},
	} {
		if resp := postDecide(t, c, ts.URL, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("decision with csrf %q: %d, want 403", form.Get("csrf"), resp.StatusCode)
		}
	}
	if len(b.decided) != 0 {
		t.Fatalf("a decision without the CSRF token reached the backend: %v", b.decided)
	}
	resp := postDecide(t, c, ts.URL, url.Values{"decision": {"approve"}, "reason": {"looked at it"}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/approvals/a-0123456789ab?decided=1" || len(b.decided) != 1 || b.decided[0] != "a-0123456789ab true looked at it" {
		t.Errorf("decision with the CSRF token: %d %q, decided %v", resp.StatusCode, resp.Header.Get("Location"), b.decided)
	}
	if resp := postDecide(t, c, ts.URL, url.Values{"decision": {"maybe"}, "csrf": {csrf}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("decision %q: %d, want 400", "maybe", resp.StatusCode)
	}
}

// TestDecideRefusedIsForbidden: a decision the backend refuses for the
// token's rights is answered 403 with the refusal.
func TestDecideRefusedIsForbidden(t *testing.T) {
	ts := newTestConsole(t, &decideBackend{deny: true}, Options{})
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	csrf := login(t, ts, c)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/approvals/a-0123456789ab/decide", strings.NewReader(url.Values{"decision": {"approve"}, "csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "no approve right") {
		t.Errorf("refused decision: %d %s", resp.StatusCode, body)
	}
}

// TestPagesRefusedWithoutToken: the new pages go to the login page too.
func TestPagesRefusedWithoutToken(t *testing.T) {
	ts := newTestConsole(t, &fakeBackend{}, Options{})
	for _, p := range []string{"/tools", "/tools/tools/x.ts", "/approvals", "/approvals/log", "/approvals/a-0123456789ab", "/procs", "/cluster"} {
		resp, err := noRedirect(nil).Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
			t.Errorf("GET %s without a session: %d %q", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

func TestProcTree(t *testing.T) {
	ps := []Proc{{PID: 1}, {PID: 5, Parent: 2}, {PID: 2, Parent: 1}, {PID: 3, Parent: 1}, {PID: 9, Parent: 77}}
	var got []string
	for _, r := range procTree(ps) {
		got = append(got, fmt.Sprintf("%s%d", r.Indent, r.PID))
	}
	want := []string{"1", "├─ 2", "│  └─ 5", "└─ 3", "9"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tree %q, want %q", got, want)
	}
}

// richBackend answers every page with data in every field, so that each
// template is rendered through all its branches.
type richBackend struct{ fakeBackend }

func (*richBackend) SearchTools(context.Context, Principal, string, int) ([]ToolHit, error) {
	return []ToolHit{{ToolInfo: richTool().ToolInfo, Score: 0.93}}, nil
}
func (*richBackend) Tools(context.Context, Principal, string, int) (ToolPage, error) {
	return ToolPage{Tools: []ToolInfo{richTool().ToolInfo}, Next: "tools/x.ts", Total: 2}, nil
}
func richTool() ToolDetail {
	now := time.Now()
	return ToolDetail{
		ToolInfo: ToolInfo{Path: "tools/x.ts", Name: "x", Description: "Does x.", Tags: []string{"a"}, Hash: "0123456789abcdef", Version: 2, Usage: 3, Created: now, Updated: now, Parameters: "{}", Approval: "pending"},
		Source:   "export default () => 1;\n",
		Check: check.Result{Valid: false, Risk: check.RiskHigh, Errors: []check.Finding{{Line: 1, Column: 2, Rule: "r", Message: "bad"}},
			Warnings: []check.Finding{{Line: 2, Column: 1, Rule: "w", Message: "meh"}}, Risks: []check.RiskFinding{{Level: check.RiskHigh, Reason: "why", Line: 1, Column: 1, Module: "tools/lib/m.ts"}}},
		Versions: []ToolVersion{{Hash: "0123456789abcdef", Current: true, Runs: 1, Last: now, LastRun: "r1", Commit: "c0ffee", Approval: "approved"}, {Hash: "fedcba9876543210"}},
		Gate:     &gate.Report{Path: "tools/x.ts", Policy: gate.PolicyWarn, Blocked: true, Runs: []gate.RunReport{{Run: "r1", Tool: "tools/y.ts", Outcome: gate.OutcomeDivergence, Old: "1", New: "2", Code: "AGENTOS-J001", Seq: 3, Detail: "d"}}},
		GateAt:   now,
	}
}
func (*richBackend) Tool(context.Context, Principal, string) (ToolDetail, error) {
	return richTool(), nil
}
func (*richBackend) ToolVersion(context.Context, Principal, string, string, string, string, int) (ToolVersionDetail, error) {
	return ToolVersionDetail{Path: "tools/x.ts", Version: richTool().Versions[0], Source: "a\n", SourceNote: "note", Check: richTool().Check,
		Base: "fedcba9876543210", Diff: Diff("a\nb\n", "a\nc\n", 3), Runs: []ToolRun{{ID: "r1", Status: "failed", Started: time.Now(), Duration: time.Second, Calls: 2, Error: "boom"}}, Next: "r1"}, nil
}
func richRequest() approval.Request {
	now := time.Now()
	return approval.Request{ID: "a-0123456789ab", Path: "tools/x.ts", Hash: "0123456789abcdef", Source: "ffff", Modules: []string{"tools/lib/m.ts@1"}, Risk: "high", Reasons: []string{"why"},
		State: approval.StateDenied, RequestedBy: "pid:3", Requested: now, DecidedBy: "console:bob", Reason: "no", Decided: now, Waiting: 1}
}
func (*richBackend) Approvals(context.Context, Principal, approval.State) ([]approval.Request, error) {
	return []approval.Request{richRequest()}, nil
}
func (*richBackend) Approval(context.Context, Principal, string) (ApprovalDetail, error) {
	return ApprovalDetail{Request: richRequest(), Source: "src", SourceNote: "note", CanDecide: true}, nil
}
func (*richBackend) DecisionLog(context.Context, Principal, int, int) ([]approval.Event, bool, error) {
	return []approval.Event{{At: time.Now(), ID: "a-0123456789ab", Path: "tools/x.ts", Hash: "0123", Event: "denied", By: "console:bob", Reason: "no"}}, true, nil
}
func (*richBackend) Processes(_ context.Context, _ Principal, node string) ([]Proc, error) {
	if node == "127.0.0.1:2" {
		return nil, fmt.Errorf("%w: 127.0.0.1:2: timeout", ErrNoAnswer)
	}
	return []Proc{{PID: 1, Name: "sup", Image: "supervisor", Status: "running", Usage: []string{"tool_calls=1"}, Left: []string{"tool_calls=9"}, Supervisor: true, Started: time.Now()}, {PID: 2, Parent: 1, Status: "waiting"}}, nil
}
func (*richBackend) Events(context.Context, Principal, string, uint64, int) ([]ProcEvent, error) {
	return []ProcEvent{{Seq: 1, Time: time.Now(), Kind: "exit", PID: 2, Reason: "fault", Detail: "x"}, {Seq: 2, Kind: "charge", Meter: "tool_calls", Amount: 1}, {Seq: 3, Kind: "signal", Detail: "kill"}}, nil
}
func (*richBackend) Cluster(context.Context, Principal) (ClusterView, error) {
	return ClusterView{Clustered: true, Cluster: "c", Self: "127.0.0.1:1", Left: []string{"127.0.0.1:3"}, Members: []ClusterMember{
		{ID: "m1", Address: "127.0.0.1:1", Kinds: []string{"forge"}, Root: "/r", PID: "9", Version: "v1", Forges: []string{"abcdef0123456789"}, Activations: []string{"forge/abc"}},
		{ID: "m2", Address: "127.0.0.1:2", Error: "timeout"}}}, nil
}

// TestPagesRender renders every page of the area with data in every
// field: no template fails.
func TestPagesRender(t *testing.T) {
	ts := newTestConsole(t, &richBackend{}, Options{})
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	login(t, ts, c)
	for p, want := range map[string]string{
		"/tools":                        "tools/x.ts",
		"/tools?q=x":                    "0.93",
		"/tools/tools/x.ts":             "AGENTOS-J001",
		"/tools/tools/x.ts?version=012": `<tr class="add">`,
		"/approvals":                    "console:bob",
		"/approvals?state=all":          "a-0123456789ab",
		"/approvals/a-0123456789ab":     `id="decide"`,
		"/approvals/log":                "Older →",
		"/procs":                        "└─ ",
		"/cluster":                      "did not answer: timeout",
		"/procs?node=127.0.0.1:1":       "Processes on <code>127.0.0.1:1</code>",
	} {
		resp, err := c.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want %q in\n%s", p, resp.StatusCode, want, body)
		}
	}
}

// A member that does not answer is shown as such on its Processes page
// (502, its error in the page), not hidden and not a bare error page.
func TestProcsOfSilentMember(t *testing.T) {
	ts := newTestConsole(t, &richBackend{}, Options{})
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	login(t, ts, c)
	resp, err := c.Get(ts.URL + "/procs?node=127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `id="no-answer"`) || !strings.Contains(body, "127.0.0.1:2: timeout") {
		t.Fatalf("GET /procs?node=127.0.0.1:2: %d\n%s", resp.StatusCode, body)
	}
	// The Cluster page links each member to its processes.
	resp, err = c.Get(ts.URL + "/cluster")
	if err != nil {
		t.Fatal(err)
	}
	body = readAll(t, resp)
	resp.Body.Close()
	if !strings.Contains(body, `href="/procs?node=127.0.0.1%3a1"`) {
		t.Fatalf("the Cluster page does not link a member's processes:\n%s", body)
	}
}
