package driver

import (
	"bytes"
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
// Operation "fetch", request {url, init?: {method?, headers?, body?}},
// response {status, headers, body} with body as text (executor.FetchBinding
// makes it tgp.fetch(url, init)). Non-2xx statuses are answers, not errors: the tool
// decides.
type Fetch struct {
	// Allow lists URL prefixes, e.g. "https://api.example.com/v1/". A
	// prefix MUST include the scheme and host; "https://api.example.com"
	// does not allow https://api.example.com.evil.io (the prefix must end
	// the host: at "/", ":" or the end).
	Allow []string
	// Timeout bounds one request, headers and body (0: 10 s).
	Timeout time.Duration
	// MaxBytes caps a response body (0: 4 MiB); a larger one is an error.
	MaxBytes int64
	// Client sends the requests (nil: a client that follows at most 5
	// redirects, each checked against Allow).
	Client *http.Client
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
}

// FetchResponse is its answer.
type FetchResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// Allowed reports whether u may be fetched under allow. The scheme and
// host (with its port, default ports made explicit) MUST equal a prefix's;
// then the path must start with the prefix's path. A URL with userinfo is
// never allowed (https://api.example.com:443@evil.io/ goes to evil.io).
func Allowed(allow []string, u string) bool {
	t, err := url.Parse(u)
	if err != nil || t.User != nil || t.Host == "" || t.Opaque != "" {
		return false
	}
	for _, p := range allow {
		pu, err := url.Parse(p)
		if err != nil || pu.Host == "" || pu.User != nil {
			continue
		}
		if !strings.EqualFold(pu.Scheme, t.Scheme) || hostPort(pu) != hostPort(t) {
			continue
		}
		if strings.HasPrefix(t.EscapedPath(), pu.EscapedPath()) {
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

// Do runs one fetch.
func (f Fetch) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	if op != "fetch" {
		return nil, Errorf(CodeUnsupported, "fetch has no operation %q (use tgp.fetch(url, init))", op)
	}
	var r FetchRequest
	if err := decode(op, req, &r); err != nil {
		return nil, err
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, Errorf(CodeInvalid, "fetch: %q is not an http(s) URL", r.URL)
	}
	if !Allowed(f.Allow, r.URL) {
		if len(f.Allow) == 0 {
			return nil, Errorf(CodeSecurity, "fetch %s refused: no URL is allowed (add a prefix to fetch.allow in agentos.json)", r.URL)
		}
		return nil, Errorf(CodeSecurity, "fetch %s refused: it is outside the allowed prefixes %v", r.URL, f.Allow)
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	max := f.MaxBytes
	if max <= 0 {
		max = 4 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	method := strings.ToUpper(r.Init.Method)
	if method == "" {
		method = http.MethodGet
	}
	hr, err := http.NewRequestWithContext(ctx, method, r.URL, strings.NewReader(r.Init.Body))
	if err != nil {
		return nil, Errorf(CodeInvalid, "fetch %s: %v", r.URL, err)
	}
	for k, v := range r.Init.Headers {
		hr.Header.Set(k, v)
	}
	client := f.Client
	if client == nil {
		client = &http.Client{CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if !Allowed(f.Allow, next.URL.String()) {
				return fmt.Errorf("redirected to %s, outside the allowed prefixes", next.URL)
			}
			return nil
		}}
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, Errorf(CodeUnavailable, "fetch %s: no answer within %s", r.URL, timeout)
		}
		return nil, Errorf(CodeIO, "fetch %s: %v", r.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, Errorf(CodeIO, "fetch %s: reading the body: %v", r.URL, err)
	}
	if int64(len(body)) > max {
		return nil, Errorf(CodeIO, "fetch %s: the response is larger than %d bytes (fetch.max_bytes)", r.URL, max)
	}
	out := FetchResponse{Status: resp.StatusCode, Headers: map[string]string{}, Body: string(bytes.ToValidUTF8(body, []byte("\uFFFD")))}
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Headers[strings.ToLower(k)] = strings.Join(resp.Header[k], ", ")
	}
	return encode(out)
}
