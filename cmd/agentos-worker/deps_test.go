package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkerLinksOnlyTheWorker: agentos-worker starts fast because it links
// none of the actor system, the cluster (etcd, gRPC), the metrics, the
// databases (pgx, SQLite, bbolt), the model's SDK, OpenTelemetry, the
// transpiler (esbuild) or an HTTP stack; a new import that drags one in
// fails here, naming it.
func TestWorkerLinksOnlyTheWorker(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command (go list -deps)")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	banned := []string{
		"go.etcd.io/", "google.golang.org/grpc", "github.com/prometheus/", "github.com/asynkron/protoactor-go",
		"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/openai/", "go.opentelemetry.io/",
		"github.com/evanw/esbuild", "net/http", "github.com/modelcontextprotocol/",
		"github.com/agentos-run/agentos/actors/executor\n", "github.com/agentos-run/agentos/journal",
		"github.com/agentos-run/agentos/driver\n",
		// What made a worker's start 5-6 ms slower (docs/PERFORMANCE.md): cgo
		// (go-landlock's libpsx linked it: a dynamically linked program), goja's
		// JS profiler (pprof's package-level regexps), and reading another
		// binary's build information (debug/elf, dwarf, macho, pe).
		"runtime/cgo\n", "github.com/landlock-lsm/", "kernel.org/pub/linux/libs/security/libcap/psx",
		"github.com/google/pprof/", "debug/",
	}
	deps := string(out) + "\n"
	for _, b := range banned {
		if strings.HasSuffix(b, "\n") && strings.Contains(deps, b) || !strings.HasSuffix(b, "\n") && containsPrefix(deps, b) {
			t.Errorf("agentos-worker links %s", strings.TrimSpace(b))
		}
	}
}

// containsPrefix says whether a line of lines starts with p.
func containsPrefix(lines, p string) bool {
	for _, l := range strings.Split(lines, "\n") {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
