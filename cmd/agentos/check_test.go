package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/samples"
)

const fibSrc = samples.FibTool

func TestCheck(t *testing.T) {
	root := toolRoot(t, map[string]string{
		"tools/math/fib.ts": fibSrc,
		"tools/bad.ts":      "export default function (a: any) {\n  return a.x * 42;\n}\n",
		"tools/syntax.ts":   "export default () => {\n  const x = ;\n};\n",
	})
	code, stdout, _ := cli(t, "check", "--root", root, "tools/math/fib.ts")
	if code != 0 || !strings.Contains(stdout, "tools/math/fib.ts: valid, risk low") {
		t.Fatalf("valid tool: %d %q", code, stdout)
	}
	// Flags may follow the path; --json prints exactly one JSON object.
	code, stdout, _ = cli(t, "check", "tools/bad.ts", "--root", root, "--json")
	var res struct {
		Valid  bool `json:"valid"`
		Errors []struct {
			Line, Column int
			Rule         string
		} `json:"errors"`
		Risk string `json:"risk"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("--json did not print exactly one object: %v %q", err, stdout)
	}
	if code != 1 || res.Valid || len(res.Errors) != 2 || res.Risk == "" {
		t.Fatalf("invalid tool: exit %d %+v", code, res)
	}
	if e := res.Errors[0]; e.Rule != "no-any" || e.Line != 1 || e.Column != 29 {
		t.Fatalf("first error %+v, want no-any at 1:29", e)
	}
	code, stdout, _ = cli(t, "check", "--root", root, "tools/syntax.ts")
	if code != 1 || !strings.Contains(stdout, "2:13") {
		t.Fatalf("syntax error: %d %q", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--root", root, "tools/nope.ts"}, "no file tools/nope.ts"},
		{[]string{"check", "--root", root}, "expected one PATH"},
		{[]string{"check", "--bogus", "x.ts"}, "unknown flag --bogus ('agentos check --help' lists its flags)"},
		{[]string{"check", "--root", root + "/missing", "x.ts"}, "is not a directory"},
	} {
		code, stdout, stderr := cli(t, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d stdout %q stderr %q, want exit 2 and one line containing %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
