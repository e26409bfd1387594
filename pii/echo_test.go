package pii

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/driver"
)

// echoValues are restored values with characters every encoding changes.
var echoValues = []string{"ada@example.com", "+44 20 7946 0958", "Ada Lovelace", "Zoë O'Brien"}

// spellings returns the ways a driver or a server may write v.
func spellings(v string) map[string]string {
	q := url.QueryEscape(v)
	j, _ := json.Marshal(v)
	ascii := strconv.QuoteToASCII(v)
	var uesc strings.Builder // every character as \uXXXX
	for _, r := range v {
		fmt.Fprintf(&uesc, `\u%04X`, r)
	}
	var pct strings.Builder // every byte as %xx, lower-case hex
	for _, b := range []byte(v) {
		fmt.Fprintf(&pct, "%%%02x", b)
	}
	return map[string]string{
		"raw":          v,
		"upper":        strings.ToUpper(v),
		"QueryEscape":  q,
		"%20":          strings.ReplaceAll(q, "+", "%20"),
		"PathEscape":   url.PathEscape(v),
		"lower hex":    strings.ToLower(q),
		"double":       url.QueryEscape(q),
		"json":         string(j[1 : len(j)-1]),
		"QuoteToASCII": ascii[1 : len(ascii)-1],
		"\\u all":      uesc.String(),
		"\\\\u nested": strings.ReplaceAll(uesc.String(), `\`, `\\`),
		"% all lower":  pct.String(),
		"html":         html.EscapeString(v),
		"html &#NN;":   strings.ReplaceAll(v, "@", "&#64;"),
	}
}

func TestMaskEveryEncoding(t *testing.T) {
	for _, v := range echoValues {
		pairs := []Pair{{Token: "PII_X_000000000001", Value: v}, {Token: "PII_X_000000000002", Value: "other@example.com"}}
		for name, sp := range spellings(v) {
			for _, ctx := range []string{"%s", "GET http://h/p?email=%s&x=1: refused", `{"q":"%s"}`, "(%s)", "to%%20%s%%20now"} {
				in := fmt.Sprintf(ctx, sp)
				out := mask(in, pairs)
				if out != strings.Replace(in, sp, "PII_X_000000000001", 1) {
					t.Errorf("%q as %s in %q: masked to %q", v, name, in, out)
				}
			}
		}
	}
}

func TestMaskKeepsWordsAndOthers(t *testing.T) {
	pairs := []Pair{{Token: "PII_NAME_000000000001", Value: "Ada"}}
	for in, want := range map[string]string{
		"Canada and Adalbert":   "Canada and Adalbert",
		"ada, ADA and %41da":    "PII_NAME_000000000001, PII_NAME_000000000001 and PII_NAME_000000000001",
		"name=Ada&x=%20Ada%20":  "name=PII_NAME_000000000001&x=%20PII_NAME_000000000001%20",
		"no personal data here": "no personal data here",
	} {
		if got := mask(in, pairs); got != want {
			t.Errorf("mask(%q) = %q, want %q", in, got, want)
		}
	}
	if s := "nothing"; mask(s, nil) != s {
		t.Error("mask without pairs changed its input")
	}
}

// leaks reports whether s holds v in a form a reader can decode: literal
// (any case) after up to three rounds of URL decoding and JSON unquoting.
func leaks(s, v string) bool {
	cands := []string{s}
	for range 3 {
		for _, c := range cands {
			if u, err := url.QueryUnescape(c); err == nil {
				cands = append(cands, u)
			}
			if u, err := url.PathUnescape(c); err == nil {
				cands = append(cands, u)
			}
			if u, err := strconv.Unquote(`"` + c + `"`); err == nil {
				cands = append(cands, u)
			}
			cands = append(cands, html.UnescapeString(c))
		}
	}
	for _, c := range cands {
		if strings.Contains(strings.ToLower(c), strings.ToLower(v)) {
			return true
		}
	}
	for _, sp := range spellings(v) {
		if strings.Contains(strings.ToLower(s), strings.ToLower(sp)) {
			return true
		}
	}
	return false
}

// TestFetchEchoesNoRestoredValue wraps the real fetch driver for a
// restore_to target and makes it fail or echo in every way a URL comes
// back: a refused connection, a timeout, a reply too big, a server that
// echoes the raw query string. The target receives the real values; the
// reply and the error hold tokens only.
func TestFetchEchoesNoRestoredValue(t *testing.T) {
	// A closed port on loopback: the connection is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	_ = l.Close()
	got := make(chan string, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.RawQuery
		switch r.URL.Path {
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Echo", r.URL.RawQuery)
			_, _ = fmt.Fprintf(w, `{"query":%q,"path":%q,"body":%s}`, r.URL.RawQuery, r.URL.EscapedPath(), body)
		case "/big":
			_, _ = io.WriteString(w, strings.Repeat("x", 2048))
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()

	tk := newT(t, Options{Detect: []string{Email, Phone}, Names: []string{"Ada Lovelace", "Zoë O'Brien"}, RestoreTo: []string{"fetch"}})
	var toks []string
	for _, v := range echoValues {
		tok, err := tk.String(v)
		if err != nil || !tokenShape.MatchString(tok) {
			t.Fatalf("%q tokenized to %q, %v", v, tok, err)
		}
		toks = append(toks, tok)
	}
	query := "?email=" + toks[0] + "&phone=" + toks[1] + "&name=" + toks[2] + "&other=" + toks[3]
	path := toks[2] + "/" + toks[0]
	dev := tk.Device("fetch", driver.Fetch{Allow: []string{closed, srv.URL + "/"}, Timeout: 500 * time.Millisecond, MaxBytes: 1024})
	for _, c := range []struct {
		name, url string
		fails     bool
	}{
		{"refused", closed + "find/" + path + query, true},
		{"timeout", srv.URL + "/slow" + query, true},
		{"too big", srv.URL + "/big" + query, true},
		{"echo", srv.URL + "/echo" + query, false},
	} {
		req, _ := json.Marshal(driver.FetchRequest{URL: c.url, Init: driver.FetchInit{Method: "POST", Body: `{"email":"` + toks[0] + `"}`}})
		resp, err := dev.Do(context.Background(), "fetch", req)
		if c.fails != (err != nil) {
			t.Fatalf("%s: %s, %v", c.name, resp, err)
		}
		text := string(resp)
		if err != nil {
			text = err.Error()
			if driver.AsError(err).Code == "" {
				t.Errorf("%s: the error lost its code: %v", c.name, err)
			}
		}
		for _, v := range echoValues {
			if leaks(text, v) {
				t.Errorf("%s: %q leaks in %s", c.name, v, text)
			}
		}
		if !strings.Contains(text, toks[0]) {
			t.Errorf("%s: %s does not hold the e-mail's token %s", c.name, text, toks[0])
		}
	}
	// Every handler has returned before got is closed: one still
	// running (the slow one, its client gone) would send on it.
	close(release)
	srv.Close()
	close(got)
	n := 0
	for q := range got {
		n++
		if u, _ := url.ParseQuery(q); u.Get("email") != "ada@example.com" || u.Get("name") != "Ada Lovelace" || u.Get("other") != "Zoë O'Brien" {
			t.Errorf("the target received %q, want the real values", q)
		}
	}
	if n != 3 {
		t.Errorf("the target received %d requests, want 3", n)
	}
}

// The e-mail detector also finds an address percent-encoded in a URL or a
// form, whoever wrote it, and gives it the token of the decoded address.
func TestEmailPercentEncoded(t *testing.T) {
	tk := newT(t, Options{Detect: []string{Email}})
	tok := tk.Token(Email, "ada@example.com")
	plus := tk.Token(Email, "ada+news@example.com")
	for in, want := range map[string]string{
		"GET http://h/find?email=ada%40example.com&x=1": "GET http://h/find?email=" + tok + "&x=1",
		"to%20ada%40example.com%20now":                  "to%20" + tok + "%20now",
		"mailto%3Aada%40example.com":                    "mailto%3A" + tok,
		"q=ada%2Bnews%40example.com":                    "q=" + plus,
		"ada@example.com and ada%40example.com":         tok + " and " + tok,
		"100%40 of it":                                  "100%40 of it",
	} {
		got, err := tk.String(in)
		if err != nil || got != want {
			t.Errorf("%q: tokenized to %q (%v), want %q", in, got, err, want)
		}
	}
	if u, _, err := tk.RestoreString("https://h/find?email=" + tok); err != nil || u != "https://h/find?email=ada%40example.com" {
		t.Errorf("restored %q, %v", u, err)
	}
}
