package console

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPagesParsedOnFirstUse: every page template parses (with the layout),
// and not during the package's initialisation, which every agentos command
// pays (issue 28 goal 5): a program that only links the console parses no
// template.
func TestPagesParsedOnFirstUse(t *testing.T) {
	if os.Getenv("CONSOLE_INIT_PROBE") == "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPagesParsedOnFirstUse$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CONSOLE_INIT_PROBE=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		// init <pkg> @<t> ms, <d> ms clock, <bytes> bytes, <n> allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[1] != "github.com/agentos-run/agentos/console" {
			continue
		}
		if b, err := strconv.Atoi(f[7]); err != nil || b > 64<<10 {
			t.Errorf("the console's init allocates over 64 KiB (parses its templates?): %s", line)
		}
	}
	p := pages()
	if len(p) == 0 || p["runs.html"] == nil {
		t.Fatalf("pages: %d parsed, runs.html %v", len(p), p["runs.html"])
	}
}
