package kernel

import "testing"

// dotSegment finds the segments that would let a URL leave a fetch grant's
// prefix once a server (or a later normalisation) resolves them, in every
// encoding a lenient server decodes; it leaves the query and fragment, and
// names that merely contain dots, alone.
func TestDotSegment(t *testing.T) {
	for u, want := range map[string]string{
		"http://h/v1/../admin":            "..",
		"http://h/v1/./x":                 ".",
		"http://h/v1/%2e%2e/admin":        "..",
		"http://h/v1/%2E%2e/admin":        "..",
		"http://h/v1/.%2e/admin":          "..",
		"http://h/v1/%252e%252e/admin":    "..",
		"http://h/v1/..%2fadmin":          "..",
		"http://h/v1/..%5cadmin":          "..",
		`http://h/v1/..\admin`:            "..",
		"http://h/v1/%zz/../admin":        "..",
		"http://h/v1/..":                  "..",
		"http://h/v1/x?q=../y":            "",
		"http://h/v1/x#../y":              "",
		"http://h/v1/...":                 "",
		"http://h/v1/a..b/.c":             "",
		"http://h":                        "",
		"http://h/":                       "",
		"https://api.example.com/v1/ok/x": "",
	} {
		got, ok := dotSegment(u)
		if got != want || ok != (want != "") {
			t.Errorf("dotSegment(%q) = %q, %v; want %q", u, got, ok, want)
		}
	}
}
