package driver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// FetchDriver is the name of the HTTP device.
const FetchDriver = "fetch"

// Fetch is the HTTP device: tgp.fetch(url, init) reaches only URLs that
// start with one of Allow's prefixes (none by default), with a timeout and
// a cap on the response size. Every call goes through the run's Host, so it
// is journaled and replays offline like any other.
//
// Operation "fetch", request {url, init?: {method?, headers?, body?, auth?}},
// response {status, headers, body} with body as text (executor.FetchBinding
// makes it tgp.fetch(url, init)). Non-2xx statuses are answers, not errors: the tool
// decides.
//
// IMPORTANT: the URL is checked and sent in its canonical form (see
// CanonicalURL): what the allow-list saw is exactly what the server gets,
// and so is every redirect target. init.auth names a Secret the device adds
// on the way out: the tool, its request and the journal carry only the
// name, never the value.
type Fetch struct {
	// Allow lists URL prefixes, e.g. "https://api.example.com/v1/". A
	// prefix MUST include the scheme and host; "https://api.example.com"
	// does not allow https://api.example.com.evil.io (the prefix must end
	// the host: at "/", ":" or the end), and "https://h/v1" does not allow
	// https://h/v1-admin (a path prefix ends at a "/" too).
	Allow []string
	// Timeout bounds one request, headers and body (0: 10 s).
	Timeout time.Duration
	// MaxBytes caps a response body (0: 4 MiB); a larger one is an error.
	MaxBytes int64
	// Client sends the requests (nil: a client that follows at most 5
	// redirects). Whatever the client, every redirect target is
	// canonicalised and checked against Allow (and a secret's own allow-list)
	// before it is followed.
	Client *http.Client
	// Secrets are the named credentials init.auth may name.
	Secrets map[string]Secret
}

// Secret is a named credential (a "binding") the fetch device adds to a
// request on its way out, so that a tool never sees it: tgp.fetch(url,
// {auth: "github"}). Exactly one of Header and Query MUST be set.
type Secret struct {
	// Header is the request header that carries the credential, e.g.
	// "Authorization".
	Header string `json:"header,omitempty"`
	// Query is the query parameter that carries it instead, e.g. "api_key".
	Query string `json:"query,omitempty"`
	// Format renders the value: every "{}" is replaced by it, e.g.
	// "Bearer {}". Empty: "{}".
	Format string `json:"format,omitempty"`
	// Allow lists the URL prefixes the credential may be sent to (the same
	// rules as Fetch.Allow; a URL MUST pass both). IMPORTANT: a request or a
	// redirect outside them never carries it.
	Allow []string `json:"allow,omitempty"`
	// Value is the credential. Empty: it is not available (Env says where
	// it should have come from) and a fetch naming it fails.
	Value string `json:"-"`
	// Env names the environment variable Value was read from, for errors.
	Env string `json:"env,omitempty"`
}

// rendered is the credential as sent.
func (s Secret) rendered() string {
	f := s.Format
	if f == "" {
		f = "{}"
	}
	return strings.ReplaceAll(f, "{}", s.Value)
}

// SecretValues returns the credential values the device holds (each value
// and its rendered form), for the journal to scrub by value wherever they
// appear.
func (f Fetch) SecretValues() []string {
	var out []string
	for _, s := range f.Secrets {
		if s.Value != "" {
			out = append(out, s.Value, s.rendered())
		}
	}
	return out
}

// FetchRequest is the request of a fetch call.
type FetchRequest struct {
	URL  string    `json:"url"`
	Init FetchInit `json:"init,omitzero"`
}

// FetchInit is fetch's second argument, as in the web's fetch.
type FetchInit struct {
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// Auth names a Secret the device adds to the request (the journal
	// records this name, never the value).
	Auth string `json:"auth,omitempty"`
}

// FetchResponse is its answer. IMPORTANT: its fields are in the order of
// their JSON names, so that its encoding is the journal's canonical form
// (keys sorted): a tool that stringifies the answer sees the same text
// live and replayed.
type FetchResponse struct {
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	Status  int               `json:"status"`
}

// Allowed reports whether u may be fetched under allow, comparing
// canonical forms (CanonicalURL): the scheme and host (with its port,
// default ports made explicit) MUST equal a prefix's; then the canonical
// path must start with the prefix's path, at a "/" boundary. A URL with
// userinfo is never allowed (https://api.example.com:443@evil.io/ goes to
// evil.io), nor one CanonicalURL refuses.
func Allowed(allow []string, u string) bool {
	c, err := CanonicalURL(u)
	return err == nil && allowedURL(allow, c)
}

// allowedURL is Allowed for a URL already in canonical form.
func allowedURL(allow []string, t *url.URL) bool {
	for _, p := range allow {
		pu, err := CanonicalURL(p)
		if err != nil {
			continue
		}
		if pu.Scheme != t.Scheme || hostPort(pu) != hostPort(t) {
			continue
		}
		pp, tp := pu.EscapedPath(), t.EscapedPath()
		if tp == pp || (strings.HasPrefix(tp, pp) && (strings.HasSuffix(pp, "/") || tp[len(pp)] == '/')) {
			return true
		}
	}
	return false
}

// hostPort is u's lowercased host with its port, the scheme's default
// port made explicit.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// CanonicalURL returns the one form of raw that the fetch device checks
// and sends, or a *Error saying why raw is refused. Servers and proxies
// disagree on ambiguous paths, so the device resolves what has one meaning
// and refuses what has several:
//
//   - the scheme (http or https) and host are lowercased; the fragment,
//     never sent, is dropped; userinfo is refused;
//   - percent-encoded unreserved characters are decoded (%2e is ".", %41 is
//     "A") and other escapes upper-cased, so one resource has one spelling;
//   - dot segments, literal or encoded (".", "..", "%2e%2E", ".%2e"), are
//     resolved as RFC 3986 section 5.2.4 says, and the resolved path is what
//     is sent: the server never sees a "..";
//   - refused: a backslash anywhere (some servers read it as "/"), an
//     encoded "/" or "\" in the path (%2F, %5C: some servers decode them
//     before routing), an encoded NUL, a double-encoded dot or slash (%252e:
//     a server that decodes twice would see ".."), and a dot segment with
//     path parameters ("..;x": Tomcat reads it as "..");
//   - empty segments ("//") are kept as written: merging them, as some
//     servers do, only shortens a path that already starts with the
//     allowed prefix (an allowed prefix is itself canonical);
//   - the query is sent as written.
func CanonicalURL(raw string) (*url.URL, error) {
	if strings.ContainsRune(raw, '\\') {
		return nil, Errorf(CodeSecurity, "fetch %s refused: backslashes are ambiguous in URLs (some servers read them as '/'); write '/'", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Errorf(CodeInvalid, "fetch: %q is not a URL: %v", raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, Errorf(CodeInvalid, "fetch: %q is not an http(s) URL with a host", raw)
	}
	if u.User != nil {
		return nil, Errorf(CodeSecurity, "fetch %s refused: URLs with credentials (user@host) are never fetched; name a secret with init.auth instead", raw)
	}
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	p, err := canonPath(u.EscapedPath())
	if err != nil {
		return nil, Errorf(CodeSecurity, "fetch %s refused: %v", raw, err)
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return nil, Errorf(CodeInvalid, "fetch: %q: %v", raw, err)
	}
	u.Path, u.RawPath = dec, p
	if u.EscapedPath() != p {
		u.RawPath = "" // Go spells it its own way; that spelling is what is checked and sent
	}
	return u, nil
}

// canonPath is the escaped path with each segment canonical (see
// canonSegment) and the dot segments resolved, "/"-led.
func canonPath(escaped string) (string, error) {
	segs := strings.Split(escaped, "/")
	if len(segs) > 0 && segs[0] == "" {
		segs = segs[1:]
	}
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		c, err := canonSegment(seg)
		if err != nil {
			return "", err
		}
		last := i == len(segs)-1
		switch c {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
			continue
		}
		if last {
			out = append(out, "") // "/a/.." is "/a/": the trailing slash stays
		}
	}
	return "/" + strings.Join(out, "/"), nil
}

// canonSegment is one path segment with unreserved escapes decoded and the
// others upper-cased, or an error for the ambiguous forms CanonicalURL
// refuses.
func canonSegment(seg string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		v, ok := hexAt(seg, i+1)
		if !ok {
			return "", fmt.Errorf("the path has a bad escape in %q", seg)
		}
		if err := escapeRefusal(seg, i, v); err != nil {
			return "", err
		}
		if unreserved(v) {
			b.WriteByte(v)
		} else {
			b.WriteString(strings.ToUpper(seg[i : i+3]))
		}
		i += 2
	}
	c := b.String()
	if name, _, ok := strings.Cut(c, ";"); ok && (name == "." || name == "..") {
		return "", fmt.Errorf("the dot segment %q carries path parameters, which some servers read as %q", seg, name)
	}
	return c, nil
}

// hexAt decodes the two hex digits of s at i; false when there are not two.
func hexAt(s string, i int) (byte, bool) {
	if i+1 >= len(s) || !isHex(s[i]) || !isHex(s[i+1]) {
		return 0, false
	}
	return unhex(s[i])<<4 | unhex(s[i+1]), true
}

// escapeRefusal says why the escape at seg[i], decoding to v, is refused:
// it hides a '/' or '\', a NUL, or (%25) a further escaped '.', '/' or
// '\'; nil when it is not.
func escapeRefusal(seg string, i int, v byte) error {
	switch v {
	case '/', '\\':
		return fmt.Errorf("the path segment %q hides a '/' or '\\' in an escape (%%2F, %%5C), which servers disagree on", seg)
	case 0:
		return fmt.Errorf("the path segment %q has an encoded NUL", seg)
	case '%':
		if w, ok := hexAt(seg, i+3); ok && strings.IndexByte("./\\", w) >= 0 {
			return fmt.Errorf("the path segment %q is double-encoded (%%25 followed by an encoded '.', '/' or '\\')", seg)
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// unreserved reports RFC 3986's unreserved characters.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// Do runs one fetch: the URL checked against the allowed prefixes, the
// secret it names bound, the request sent under the redirect policy, the
// answer read within the limits and scrubbed of the secret.
func (f Fetch) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	if op != "fetch" {
		return nil, Errorf(CodeUnsupported, "fetch has no operation %q (use tgp.fetch(url, init))", op)
	}
	var r FetchRequest
	if err := decode(op, req, &r); err != nil {
		return nil, err
	}
	u, shown, err := f.allowed(r.URL)
	if err != nil {
		return nil, err
	}
	var sec *Secret
	if r.Init.Auth != "" {
		if sec, err = f.secret(r, u, shown); err != nil {
			return nil, err
		}
	}
	timeout := cmp.Or(max(f.Timeout, 0), 10*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := newFetchRequest(ctx, r, u, sec, shown)
	if err != nil {
		return nil, err
	}
	resp, err := f.client(r, sec).Do(hr)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, Errorf(CodeUnavailable, "fetch %s: no answer within %s", shown, timeout)
		}
		return nil, Errorf(CodeIO, "fetch %s: %s", shown, scrubForms(err.Error(), sec))
	}
	defer resp.Body.Close()
	out, err := f.readResponse(resp, sec, shown)
	if err != nil {
		return nil, err
	}
	return encode(out)
}

// allowed canonicalises raw and checks it against the allowed prefixes; it
// returns the URL and how an error shows it.
func (f Fetch) allowed(raw string) (*url.URL, string, error) {
	u, err := CanonicalURL(raw)
	if err != nil {
		return nil, "", err
	}
	shown := raw
	if c := u.String(); c != raw {
		shown = fmt.Sprintf("%s (as %s)", raw, c)
	}
	if !allowedURL(f.Allow, u) {
		if len(f.Allow) == 0 {
			return nil, "", Errorf(CodeSecurity, "fetch %s refused: no URL is allowed (add a prefix to fetch.allow in agentos.json)", shown)
		}
		return nil, "", Errorf(CodeSecurity, "fetch %s refused: it is outside the allowed prefixes %v", shown, f.Allow)
	}
	return u, shown, nil
}

// newFetchRequest builds the request to u with r's method, headers and
// body, and sec's value in its header or query parameter.
func newFetchRequest(ctx context.Context, r FetchRequest, u *url.URL, sec *Secret, shown string) (*http.Request, error) {
	method := cmp.Or(strings.ToUpper(r.Init.Method), http.MethodGet)
	// IMPORTANT: the request goes to u, the URL that was checked, not to a
	// new parse of what the tool wrote.
	send := *u
	hr, err := http.NewRequestWithContext(ctx, method, send.String(), strings.NewReader(r.Init.Body))
	if err != nil {
		return nil, Errorf(CodeInvalid, "fetch %s: %v", shown, err)
	}
	for k, v := range r.Init.Headers {
		hr.Header.Set(k, v)
	}
	if sec != nil {
		if sec.Header != "" {
			hr.Header.Set(sec.Header, sec.rendered())
		} else {
			if send.RawQuery != "" {
				send.RawQuery += "&"
			}
			send.RawQuery += url.QueryEscape(sec.Query) + "=" + url.QueryEscape(sec.rendered())
		}
	}
	hr.URL = &send
	return hr, nil
}

// client is a copy of f.Client (or a new one) whose redirects stay within
// the allowed prefixes, at most 5, and never carry sec outside its own.
func (f Fetch) client(r FetchRequest, sec *Secret) *http.Client {
	client := &http.Client{}
	if f.Client != nil {
		c := *f.Client
		client = &c
	}
	theirs := client.CheckRedirect
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if err := f.redirect(next, via, r, sec); err != nil {
			return err
		}
		if theirs != nil {
			return theirs(next, via)
		}
		return nil
	}
	return client
}

// redirect checks one redirect and points next at its canonical URL.
func (f Fetch) redirect(next *http.Request, via []*http.Request, r FetchRequest, sec *Secret) error {
	if len(via) >= 5 {
		return errors.New("more than 5 redirects")
	}
	cu, err := CanonicalURL(next.URL.String())
	if err != nil {
		return fmt.Errorf("redirected to an ambiguous URL: %v", err)
	}
	if !allowedURL(f.Allow, cu) {
		return fmt.Errorf("redirected to %s, outside the allowed prefixes", cu)
	}
	if sec != nil && !allowedURL(sec.Allow, cu) {
		// The credential stays home: the header is dropped, and a
		// redirect that carries the value in its URL is refused.
		if sec.Header != "" {
			next.Header.Del(sec.Header)
		}
		if containsAny(cu.String(), sec.forms()) {
			return fmt.Errorf("redirected to %s, outside the prefixes secret %q may go to, with the secret in the URL", cu.Host, r.Init.Auth)
		}
	}
	next.URL = cu
	return nil
}

// readResponse reads at most f.MaxBytes (4 MiB by default) of the answer,
// its body and headers scrubbed of sec.
func (f Fetch) readResponse(resp *http.Response, sec *Secret, shown string) (FetchResponse, error) {
	limit := cmp.Or(max(f.MaxBytes, 0), 4<<20)
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return FetchResponse{}, Errorf(CodeIO, "fetch %s: reading the body: %s", shown, scrubForms(err.Error(), sec))
	}
	if int64(len(body)) > limit {
		return FetchResponse{}, Errorf(CodeIO, "fetch %s: the response is larger than %d bytes (fetch.max_bytes)", shown, limit)
	}
	out := FetchResponse{Status: resp.StatusCode, Headers: map[string]string{}, Body: scrubForms(string(bytes.ToValidUTF8(body, []byte("\uFFFD"))), sec)}
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Headers[strings.ToLower(k)] = scrubForms(strings.Join(resp.Header[k], ", "), sec)
	}
	return out, nil
}

// secret finds the Secret r names and checks that it may go to u.
func (f Fetch) secret(r FetchRequest, u *url.URL, shown string) (*Secret, error) {
	s, ok := f.Secrets[r.Init.Auth]
	if !ok {
		names := make([]string, 0, len(f.Secrets))
		for n := range f.Secrets {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, Errorf(CodeInvalid, "fetch %s: init.auth names the secret %q, which is not configured (configured: %v; add it under \"secrets\" in agentos.json)", shown, r.Init.Auth, names)
	}
	if !allowedURL(s.Allow, u) {
		return nil, Errorf(CodeSecurity, "fetch %s refused: the secret %q may only be sent to %v", shown, r.Init.Auth, s.Allow)
	}
	if s.Value == "" {
		return nil, Errorf(CodeUnavailable, "fetch %s: the secret %q is not available: its environment variable %s is not set where agentos runs", shown, r.Init.Auth, s.Env)
	}
	if s.Header != "" {
		for k := range r.Init.Headers {
			if strings.EqualFold(k, s.Header) {
				return nil, Errorf(CodeInvalid, "fetch %s: the request sets the header %s itself and names the secret %q that fills it in: keep one", shown, s.Header, r.Init.Auth)
			}
		}
	} else if u.Query().Has(s.Query) {
		return nil, Errorf(CodeInvalid, "fetch %s: the URL has the query parameter %s itself and names the secret %q that fills it in: keep one", shown, s.Query, r.Init.Auth)
	}
	return &s, nil
}

// forms are the spellings of the credential that may come back: raw,
// rendered, and URL-escaped.
func (s *Secret) forms() []string {
	if s == nil || s.Value == "" {
		return nil
	}
	return []string{s.rendered(), s.Value, url.QueryEscape(s.rendered()), url.QueryEscape(s.Value)}
}

func containsAny(s string, subs []string) bool {
	for _, v := range subs {
		if v != "" && strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// scrubForms replaces every form of sec's credential in s: an answer that
// echoes it (a debugging endpoint, an error page) MUST NOT hand it to the
// tool.
func scrubForms(s string, sec *Secret) string {
	for _, v := range sec.forms() {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}
