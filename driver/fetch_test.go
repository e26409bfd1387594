package driver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAllowed(t *testing.T) {
	allow := []string{"https://api.example.com", "http://127.0.0.1:8080/v1/"}
	for u, want := range map[string]bool{
		"https://api.example.com":               true,
		"https://api.example.com/x?y=1":         true,
		"https://api.example.com:443/x":         true,
		"https://api.example.com.evil.io/":      false,
		"https://api.example.community/":        false,
		"http://api.example.com/":               false,
		"http://127.0.0.1:8080/v1/users":        true,
		"http://127.0.0.1:8080/v2/users":        false,
		"http://127.0.0.1:80801/v1/":            false,
		"https://user@api.example.com.evil.io/": false,
	} {
		if got := Allowed(allow, u); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", u, got, want)
		}
	}
	if Allowed(nil, "https://api.example.com/") {
		t.Error("nothing is allowed by default")
	}
}

func fetch(t *testing.T, f Fetch, url string, init FetchInit) (FetchResponse, error) {
	t.Helper()
	req, _ := json.Marshal(FetchRequest{URL: url, Init: init})
	out, err := f.Do(context.Background(), "fetch", req)
	var r FetchResponse
	if err == nil {
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
	}
	return r, err
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("X-Method", r.Method)
			b := new(strings.Builder)
			_, _ = b.WriteString(r.Header.Get("X-Token") + ":")
			buf := make([]byte, 100)
			n, _ := r.Body.Read(buf)
			b.Write(buf[:n])
			_, _ = w.Write([]byte(b.String()))
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/away":
			http.Redirect(w, r, "http://example.invalid/", http.StatusFound)
		case "/missing":
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := Fetch{Allow: []string{srv.URL + "/"}, MaxBytes: 1000, Timeout: 100 * time.Millisecond}

	r, err := fetch(t, f, srv.URL+"/echo", FetchInit{Method: "post", Headers: map[string]string{"X-Token": "t"}, Body: "hi"})
	if err != nil || r.Status != 200 || r.Body != "t:hi" || r.Headers["x-method"] != "POST" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	if r, err := fetch(t, f, srv.URL+"/missing", FetchInit{}); err != nil || r.Status != 404 {
		t.Fatalf("a 404 is an answer, not an error: %+v %v", r, err)
	}
	for path, code := range map[string]string{"/big": CodeIO, "/slow": CodeUnavailable, "/away": CodeIO} {
		_, err := fetch(t, f, srv.URL+path, FetchInit{})
		if e := AsError(err); e == nil || e.Code != code {
			t.Errorf("%s: %v, want code %s", path, err, code)
		}
	}
	_, err = fetch(t, f, "http://example.invalid/", FetchInit{})
	var de *Error
	if !errors.As(err, &de) || de.Code != CodeSecurity || !strings.Contains(err.Error(), "outside the allowed prefixes") {
		t.Fatalf("outside the allow-list: %v", err)
	}
	_, err = fetch(t, Fetch{}, srv.URL+"/echo", FetchInit{})
	if !errors.As(err, &de) || de.Code != CodeSecurity || !strings.Contains(err.Error(), "fetch.allow") {
		t.Fatalf("no allow-list: %v", err)
	}
	if _, err := fetch(t, f, "file:///etc/passwd", FetchInit{}); AsError(err).Code != CodeInvalid {
		t.Fatalf("file URL: %v", err)
	}
}

// A fetch answer is encoded in the journal's canonical form (keys sorted),
// so a tool that stringifies it sees the same text live and replayed.
func TestFetchResponseEncodingIsCanonical(t *testing.T) {
	b, err := json.Marshal(FetchResponse{Status: 200, Headers: map[string]string{"b": "2", "a": "1"}, Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"body":"x","headers":{"a":"1","b":"2"},"status":200}`; string(b) != want {
		t.Fatalf("encoded %s, want the canonical %s", b, want)
	}
}
