package repo

import (
	"errors"
	"path"
	"strings"
	"testing"
)

// TestUpstreamErrRedacts: a transport error quoting the token loses the
// token and its chain (no Unwrap can reveal it), but stays ErrUpstream.
func TestUpstreamErrRedacts(t *testing.T) {
	const token = "tok-123456789"
	r := &Repo{opts: Options{Upstream: "https://example.com/o/r.git"}}
	inner := errors.New("GET https://x-access-token:" + token + "@example.com failed")
	err := r.upstreamErr("fetch from", inner, token)
	if !errors.Is(err, ErrUpstream) || strings.Contains(err.Error(), token) || errors.Is(err, inner) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("err = %v, want a [redacted] mark", err)
	}
	plain := errors.New("connection refused")
	if err := r.upstreamErr("push to", plain, token); !errors.Is(err, plain) {
		t.Fatalf("an error without the token keeps its chain: %v", err)
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"tools/math/fib.ts":    "math-fib",
		"tools/a.ts":           "a",
		"agentos.json":         "agentos",
		"tools/we ird/x y.ts":  "we-ird-x-y",
		"tools/..hidden.ts":    "hidden",
		"tools/.ts":            "ts",
		"tools/über/straße.ts": "ber-stra-e",
		"tools/" + strings.Repeat("x", 100) + ".ts": strings.Repeat("x", 60),
	} {
		if got := toolName(in); got != want {
			t.Errorf("toolName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCleanRel: an accepted path is canonical, relative, inside the tool
// root and never names .git.
func FuzzCleanRel(f *testing.F) {
	for _, s := range []string{"tools/a.ts", "../x", "/abs", "a/../../b", ".git/config", "a/.GIT/x", "a//b/./c", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := cleanRel(p)
		if err != nil {
			return
		}
		if c == "" || strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || path.Clean(c) != c {
			t.Fatalf("cleanRel(%q) = %q", p, c)
		}
		for _, part := range strings.Split(c, "/") {
			if strings.EqualFold(part, ".git") || part == ".." {
				t.Fatalf("cleanRel(%q) = %q names %q", p, c, part)
			}
		}
	})
}
