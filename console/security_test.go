package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeBackend accepts the token "good" and answers an empty journal.
type fakeBackend struct {
	revoked atomic.Bool
	saved   atomic.Value // the last source SaveSource got
}

func (f *fakeBackend) Login(_ context.Context, tok string) (Principal, error) {
	if tok != "good" {
		return Principal{}, fmt.Errorf("%w: not a token of this node", ErrBadToken)
	}
	return Principal{ID: "tok:1", Holder: "tester"}, nil
}
func (f *fakeBackend) Anonymous(context.Context) (Principal, error) {
	return Principal{ID: "anon"}, nil
}
func (f *fakeBackend) Verify(context.Context, Principal) error {
	if f.revoked.Load() {
		return errors.New("revoked")
	}
	return nil
}
func (f *fakeBackend) ListRuns(context.Context, Principal, RunQuery) (RunPage, error) {
	return RunPage{}, nil
}
func (f *fakeBackend) Run(_ context.Context, _ Principal, id string) (RunDetail, error) {
	return RunDetail{RunSummary: RunSummary{ID: id, Tool: "tools/x.ts"}, Replayable: true}, nil
}
func (f *fakeBackend) Replay(context.Context, Principal, ReplayRequest) (ReplayResult, error) {
	return ReplayResult{Same: true}, nil
}
func (f *fakeBackend) SaveSource(_ context.Context, _ Principal, _ string, src []byte) (SaveResult, error) {
	f.saved.Store(string(src))
	return SaveResult{Path: "tools/x.ts", Hash: "abc"}, nil
}

func newTestConsole(t *testing.T, b Backend, opts Options) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	opts.Addr = ts.Listener.Addr().String()
	s, err := New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestRefusedWithoutToken: no page of a session is served without one.
func TestRefusedWithoutToken(t *testing.T) {
	ts := newTestConsole(t, &fakeBackend{}, Options{})
	c := noRedirect(nil)
	for _, p := range []string{"/runs", "/runs/abc", "/runs/abc/debug"} {
		resp, err := c.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
			t.Errorf("GET %s without a session: %d %q, want a redirect to /login", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, err := c.PostForm(ts.URL+"/runs/abc/replay", url.Values{"mode": {"recorded"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST replay without a session: %d, want 401", resp.StatusCode)
	}
	// A bad token does not log in.
	jar, _ := cookiejar.New(nil)
	c = noRedirect(jar)
	resp, err = c.PostForm(ts.URL+"/login", url.Values{"token": {"forged"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login with a forged token: %d, cookies %v; want 401 and no cookie", resp.StatusCode, resp.Cookies())
	}
}

// login logs c in with the good token and returns the session's CSRF
// token read from the runs page.
func login(t *testing.T, ts *httptest.Server, c *http.Client) string {
	t.Helper()
	resp, err := c.PostForm(ts.URL+"/login", url.Values{"token": {"good"}, "next": {"/runs"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	var ck *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == cookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Value == "good" {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not the token", ck)
	}
	resp, err = c.Get(ts.URL + "/runs/abc/debug")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(t, resp))
	_, rest, ok := strings.Cut(b.String(), `name="csrf" value="`)
	if !ok {
		t.Fatalf("no CSRF token on the debug page")
	}
	csrf, _, _ := strings.Cut(rest, `"`)
	return csrf
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// TestStateChangeNeedsCSRF: a POST without the session's CSRF token, or
// from another origin, is refused; with both it is served.
func TestStateChangeNeedsCSRF(t *testing.T) {
	ts := newTestConsole(t, &fakeBackend{}, Options{})
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	csrf := login(t, ts, c)
	post := func(form url.Values, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/runs/abc/replay", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(url.Values{"mode": {"recorded"}}, nil); code != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", code)
	}
	if code := post(url.Values{"mode": {"recorded"}, "csrf": {"wrong"}}, nil); code != http.StatusForbidden {
		t.Errorf("with a wrong CSRF token: %d, want 403", code)
	}
	if code := post(url.Values{"mode": {"recorded"}, "csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("from another origin: %d, want 403", code)
	}
	if code := post(url.Values{"mode": {"recorded"}, "csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("cross-site: %d, want 403", code)
	}
	if code := post(url.Values{"mode": {"recorded"}, "csrf": {csrf}}, map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusOK {
		t.Errorf("with the CSRF token from the console's origin: %d, want 200", code)
	}
}

// TestHeaders: no framing, a strict CSP, no CORS.
func TestHeaders(t *testing.T) {
	ts := newTestConsole(t, &fakeBackend{}, Options{})
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/login", nil)
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("headers %v: want X-Frame-Options DENY and a strict CSP", h)
	}
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS header served: %q", h.Get("Access-Control-Allow-Origin"))
	}
}

// TestAnonymousOnlyOnLoopback: New refuses anonymous access elsewhere, and
// a loopback console serves anonymously only when told to.
func TestAnonymousOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.2:80", "example.com:80"} {
		if _, err := New(&fakeBackend{}, Options{Addr: addr, Anonymous: true}); !errors.Is(err, ErrAnonymousNotLoopback) {
			t.Errorf("anonymous on %q: %v, want ErrAnonymousNotLoopback", addr, err)
		}
	}
	ts := newTestConsole(t, &fakeBackend{}, Options{Anonymous: true})
	resp, err := noRedirect(nil).Get(ts.URL + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("anonymous on loopback: %d, want 200", resp.StatusCode)
	}
	// DNS rebinding: another host name on a loopback listener is refused.
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/runs", nil)
	req.Host = "attacker.example"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a non-loopback Host on loopback: %d, want 403", resp.StatusCode)
	}
}

// TestRevokedSessionEnds: a session whose token no longer verifies is sent
// to the login page.
func TestRevokedSessionEnds(t *testing.T) {
	b := &fakeBackend{}
	ts := newTestConsole(t, b, Options{})
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	login(t, ts, c)
	b.revoked.Store(true)
	resp, err := c.Get(ts.URL + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("revoked token's session: %d, want a redirect to /login", resp.StatusCode)
	}
}

// TestSavedSourceKeepsLF: a browser posts a textarea's lines ended by
// CRLF; the tool's file gets the LF the user typed.
func TestSavedSourceKeepsLF(t *testing.T) {
	b := &fakeBackend{}
	ts := newTestConsole(t, b, Options{})
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	csrf := login(t, ts, c)
	resp, err := c.PostForm(ts.URL+"/runs/abc/save", url.Values{"csrf": {csrf}, "source": {"a\r\nb\r\n"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, _ := b.saved.Load().(string); resp.StatusCode != http.StatusOK || got != "a\nb\n" {
		t.Errorf("save: %d, source %q; want 200 and %q", resp.StatusCode, got, "a\nb\n")
	}
}

// TestFormsKeepTheirOrigin: with Referrer-Policy no-referrer a browser
// sends "Origin: null" with a form, which the origin check refuses: the
// console MUST NOT send it.
func TestFormsKeepTheirOrigin(t *testing.T) {
	ts := newTestConsole(t, &fakeBackend{}, Options{})
	resp, err := http.Get(ts.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p := resp.Header.Get("Referrer-Policy"); p == "no-referrer" || p == "" {
		t.Errorf("Referrer-Policy %q: the forms would post Origin: null", p)
	}
}
