package driver

// Issue 10, item 5 (the allow-list was checked on the raw path) and item 7
// (credentials a tool needs are named secrets the driver adds). Every test
// runs a real HTTP server on loopback that records what it was asked for.

import (
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
)

// recorder is a loopback server that records every request URI and, like
// servers that normalise paths (python's http.server, most proxies),
// serves /admin/secret.txt for any path that cleans to it.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	uris []string
	hdrs []http.Header
}

const adminSecret = "TOPSECRET-admin-file"

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.uris = append(r.uris, req.RequestURI)
		r.hdrs = append(r.hdrs, req.Header.Clone())
		r.mu.Unlock()
		clean := path.Clean(strings.ReplaceAll(req.URL.Path, `\`, "/"))
		switch {
		case strings.HasPrefix(clean, "/admin"):
			_, _ = w.Write([]byte(adminSecret))
		case clean == "/v1/jump":
			// Location as written, dot segments and all.
			w.Header().Set("Location", req.URL.Query().Get("to"))
			w.WriteHeader(http.StatusFound)
		case clean == "/v1/echo" || clean == "/api/echo":
			_, _ = w.Write([]byte("auth=" + req.Header.Get("Authorization") + " key=" + req.Header.Get("X-Api-Key") + " uri=" + req.RequestURI))
		default:
			_, _ = w.Write([]byte("ok " + clean))
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.uris...)
}

// The attack of item 5 and its variants: none may reach /admin. Before the
// fix http://host/v1/../admin/secret.txt passed the prefix /v1/ and was sent
// as written.
func TestFetchDotSegmentsNeverLeaveThePrefix(t *testing.T) {
	srv := newRecorder(t)
	f := Fetch{Allow: []string{srv.URL + "/v1/"}}
	for _, p := range []string{
		"/v1/../admin/secret.txt",
		"/v1/%2e%2e/admin/secret.txt",
		"/v1/%2E%2e/admin/secret.txt",
		"/v1/.%2e/admin/secret.txt",
		"/v1/%2e./admin/secret.txt",
		"/v1/./../admin/secret.txt",
		"/v1//../../admin/secret.txt",
		"/v1/x/../../admin/secret.txt",
		`/v1\..\admin\secret.txt`,
		"/v1/..%2fadmin/secret.txt",
		"/v1/%2e%2e%2fadmin/secret.txt",
		"/v1/..%5cadmin/secret.txt",
		"/v1/%252e%252e/admin/secret.txt",
		"/v1/..;/admin/secret.txt",
		"/v1/%2e%2e;x/admin/secret.txt",
		"/v1/../admin/secret.txt#frag",
	} {
		r, err := fetch(t, f, srv.URL+p, FetchInit{})
		if err == nil && strings.Contains(r.Body, adminSecret) {
			t.Errorf("%s: the server answered the admin file", p)
		}
		if err == nil {
			continue
		}
		if e := AsError(err); e.Code != CodeSecurity && e.Code != CodeInvalid {
			t.Errorf("%s: %v (code %s), want a security refusal", p, err, e.Code)
		}
	}
	for _, u := range srv.seen() {
		if !strings.HasPrefix(u, "/v1/") || strings.Contains(u, "..") || strings.Contains(strings.ToLower(u), "%2e") {
			t.Errorf("the server was asked for %q: outside /v1/ or with a dot segment", u)
		}
	}
}

// What is checked is what is sent: dot segments inside the prefix are
// resolved before the request leaves, and encoded unreserved characters
// are decoded.
func TestFetchSendsTheCheckedURL(t *testing.T) {
	srv := newRecorder(t)
	f := Fetch{Allow: []string{srv.URL + "/v1/"}}
	for p, want := range map[string]string{
		"/v1/a/../b?x=1":  "/v1/b?x=1",
		"/v1/a/%2e%2e/c":  "/v1/c",
		"/v1/./d/":        "/v1/d/",
		"/v1/%7Euser/%41": "/v1/~user/A",
		"/v1/e/..":        "/v1/",
	} {
		before := len(srv.seen())
		r, err := fetch(t, f, srv.URL+p, FetchInit{})
		if err != nil || r.Status != 200 {
			t.Fatalf("%s: %+v %v", p, r, err)
		}
		if got := srv.seen()[before]; got != want {
			t.Errorf("%s: the server was asked for %q, want %q", p, got, want)
		}
	}
	// A path prefix ends at a "/": /v1 does not allow /v1-admin.
	g := Fetch{Allow: []string{srv.URL + "/v1"}}
	if _, err := fetch(t, g, srv.URL+"/v1-admin/x", FetchInit{}); err == nil || AsError(err).Code != CodeSecurity {
		t.Errorf("/v1-admin under the prefix /v1: %v", err)
	}
	if r, err := fetch(t, g, srv.URL+"/v1/ok", FetchInit{}); err != nil || r.Status != 200 {
		t.Errorf("/v1/ok under the prefix /v1: %v", err)
	}
}

// Redirect targets go through the same canonical check: a Location with
// encoded dot segments (which Go's resolver does not resolve) is resolved
// and refused.
func TestFetchRedirectTargetsAreCanonical(t *testing.T) {
	srv := newRecorder(t)
	f := Fetch{Allow: []string{srv.URL + "/v1/"}}
	for _, to := range []string{"/v1/../admin/secret.txt", "/v1/%2e%2e/admin/secret.txt", "/v1/..%2fadmin/secret.txt", srv.URL + "/v1/%2E%2E/admin/secret.txt"} {
		r, err := fetch(t, f, srv.URL+"/v1/jump?to="+strings.ReplaceAll(strings.ReplaceAll(to, "%", "%25"), "/", "%2F"), FetchInit{})
		if err == nil && strings.Contains(r.Body, adminSecret) {
			t.Errorf("redirect to %s: the admin file was answered", to)
		}
		if err == nil {
			t.Errorf("redirect to %s: followed (%+v), want a refusal", to, r)
		}
	}
	for _, u := range srv.seen() {
		if !strings.HasPrefix(u, "/v1/") {
			t.Errorf("the server was asked for %q", u)
		}
	}
	// A redirect inside the prefix is followed, canonical.
	r, err := fetch(t, f, srv.URL+"/v1/jump?to=%2Fv1%2Fa%2F%252e%252e%2Fb", FetchInit{})
	if err != nil || r.Body != "ok /v1/b" {
		t.Fatalf("redirect inside the prefix: %+v %v", r, err)
	}
}

func TestCanonicalURL(t *testing.T) {
	for raw, want := range map[string]string{
		"HTTP://API.Example.com/v1/./a/../b?q=%2e#f": "http://api.example.com/v1/b?q=%2e",
		"https://h":                  "https://h/",
		"https://h/a%2fb":            "",
		"https://h/a%5Cb":            "",
		`https://h/a\b`:              "",
		"https://h/a/%00":            "",
		"https://h/%252E%252E/x":     "",
		"https://h/..;jsessionid=1/": "",
		"https://u:p@h/":             "",
		"ftp://h/":                   "",
		"https://h/a%3fb/%7e":        "https://h/a%3Fb/~",
		"https://h/a//b":             "https://h/a//b",
		"https://h/../../x":          "https://h/x",
	} {
		u, err := CanonicalURL(raw)
		got := ""
		if err == nil {
			got = u.String()
		}
		if got != want {
			t.Errorf("CanonicalURL(%q) = %q (%v), want %q", raw, got, err, want)
		}
	}
}

// A named secret is added on the way out: the server gets it, the tool's
// request and answer never hold it, and it goes nowhere but its prefixes.
func TestFetchSecretBinding(t *testing.T) {
	const token = "sk-binding-token-12345"
	srv := newRecorder(t)
	f := Fetch{Allow: []string{srv.URL + "/"}, Secrets: map[string]Secret{
		"svc":   {Header: "Authorization", Format: "Bearer {}", Allow: []string{srv.URL + "/api/"}, Value: token, Env: "SVC_TOKEN"},
		"key":   {Query: "api_key", Allow: []string{srv.URL + "/api/"}, Value: token, Env: "SVC_TOKEN"},
		"unset": {Header: "X-Api-Key", Allow: []string{srv.URL + "/api/"}, Env: "NOT_SET_VAR"},
	}}
	r, err := fetch(t, f, srv.URL+"/api/echo", FetchInit{Auth: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.hdrs[len(srv.hdrs)-1].Get("Authorization"); got != "Bearer "+token {
		t.Fatalf("the server got Authorization %q", got)
	}
	if strings.Contains(r.Body, token) || !strings.Contains(r.Body, "auth=[REDACTED]") {
		t.Errorf("the echoed secret reached the tool: %q", r.Body)
	}
	r, err = fetch(t, f, srv.URL+"/api/echo?x=1", FetchInit{Auth: "key"})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.seen()[len(srv.seen())-1]; got != "/api/echo?x=1&api_key="+token {
		t.Fatalf("the server was asked for %q", got)
	}
	if strings.Contains(r.Body, token) {
		t.Errorf("the echoed secret reached the tool: %q", r.Body)
	}
	before := len(srv.seen())
	for _, c := range []struct {
		url, auth, code, msg string
	}{
		{srv.URL + "/v1/echo", "svc", CodeSecurity, "may only be sent to"},
		{srv.URL + "/api/../v1/echo", "svc", CodeSecurity, "may only be sent to"},
		{srv.URL + "/api/echo", "nope", CodeInvalid, "not configured"},
		{srv.URL + "/api/echo", "unset", CodeUnavailable, "NOT_SET_VAR"},
		{srv.URL + "/api/echo?api_key=mine", "key", CodeInvalid, "keep one"},
	} {
		_, err := fetch(t, f, c.url, FetchInit{Auth: c.auth})
		if e := AsError(err); err == nil || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s with %q: %v, want %s mentioning %q", c.url, c.auth, err, c.code, c.msg)
		}
	}
	if _, err := fetch(t, f, srv.URL+"/api/echo", FetchInit{Auth: "svc", Headers: map[string]string{"authorization": "mine"}}); err == nil || AsError(err).Code != CodeInvalid {
		t.Errorf("a request setting the secret's header itself: %v", err)
	}
	if n := len(srv.seen()) - before; n != 0 {
		t.Errorf("%d refused requests reached the server", n)
	}
	if vs := f.SecretValues(); len(vs) != 4 {
		t.Errorf("SecretValues = %q, want the two values and their rendered forms", vs)
	}
}

// A redirect outside a secret's prefixes leaves the secret home, even to
// a URL fetch.allow permits.
func TestFetchSecretStaysHomeOnRedirect(t *testing.T) {
	const token = "sk-redirect-token-777"
	other := newRecorder(t)
	srv := newRecorder(t)
	f := Fetch{Allow: []string{srv.URL + "/", other.URL + "/"}, Secrets: map[string]Secret{
		"svc": {Header: "X-Api-Key", Allow: []string{srv.URL + "/v1/"}, Value: token},
	}}
	r, err := fetch(t, f, srv.URL+"/v1/jump?to="+other.URL+"/v1/echo", FetchInit{Auth: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if got := other.hdrs[0].Get("X-Api-Key"); got != "" || strings.Contains(r.Body, token) {
		t.Errorf("the secret followed the redirect to another server: header %q, body %q", got, r.Body)
	}
	if got := srv.hdrs[0].Get("X-Api-Key"); got != token {
		t.Errorf("the first server got %q", got)
	}
}
