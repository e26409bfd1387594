package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallOnceAndRun(t *testing.T) {
	dir := Install(t, "is-number@7.0.0")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "is-number", "package.json")); err != nil {
		t.Fatalf("is-number not installed in %s: %v", dir, err)
	}
	again := Install(t, "is-number@7.0.0")
	if again != dir {
		t.Fatalf("the second install went to %s, not the first's %s", again, dir)
	}
	cmd := exec.Command(Node(t), "-e", `console.log(require("is-number")(5), require("is-number")("x"))`)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "true false" {
		t.Fatalf("node printed %q, want \"true false\"", got)
	}
}
