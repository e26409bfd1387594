package check

import (
	"testing"

	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/internal/tsparse"
)

// A new source that is checked and whose metadata is extracted (an exec's
// approval rating and parameter check; check_tool then write_file) is
// parsed once: the checker and the extractor share the front end's tree.
func TestCheckAndExtractParseOnce(t *testing.T) {
	src := []byte(samples.FibTool + "// TestCheckAndExtractParseOnce\n")
	c := New(Options{})
	before := tsparse.Parses()
	if r := c.CheckDeferred(samples.FibPath, src); !r.Valid {
		t.Fatalf("fib: %v", r.Errors)
	}
	if ps := toolmeta.ParamsOf(src); ps == nil || ps.Validate([]byte(`{"n": "ten"}`)) == nil {
		t.Fatal("ParamsOf(fib) does not hold n to a number")
	}
	if m := toolmeta.Extract(src); m.Description != "Returns the n-th Fibonacci number." {
		t.Fatalf("Extract(fib).Description = %q", m.Description)
	}
	if n := tsparse.Parses() - before; n != 1 {
		t.Fatalf("check, ParamsOf and Extract of one new source parsed it %d times, want 1", n)
	}
}
