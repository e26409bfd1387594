package main

import (
	"strings"
	"testing"
)

// TestDemo runs the README's main job: every step must behave as the demo
// expects (the demo itself exits 1 otherwise).
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := cli(t, "demo", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "every step behaved as expected") {
		t.Fatalf("demo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"-> 55", "stopped: timeout", "stopped: memory_limit", "security violation", "fib(30) = 832040",
		"attempt 2: check and tests passed", "ada|pro|free|2026-06-03", "reused tools/math/fibonacci.ts",
		"was killed (model requests so far: 1)", "model requests in all: 2", "same result = true"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}
