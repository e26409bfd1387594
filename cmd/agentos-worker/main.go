// Command agentos-worker is agentos's sandbox worker: the process in which
// the executor runs tools (goja, confined by Landlock, seccomp and rlimits).
// It links only what a worker needs, so it starts several times faster than
// agentos itself, which the pool otherwise starts again as its worker.
//
// Install it next to agentos (go build ./cmd/... or go install ./cmd/...):
// the pool uses it only from the directory of the running agentos, and only
// when both were built from the same sources. Run by hand, it says which
// build it is.
package main

import (
	"fmt"
	"os"

	"github.com/agentos-run/agentos/actors/executor/worker"
)

func main() {
	worker.Main() // a worker serves and exits here
	id, trusted, why := worker.Build()
	if len(os.Args) > 1 && os.Args[1] == "--build-id" {
		fmt.Println(id)
		return
	}
	fmt.Fprintf(os.Stderr, "agentos-worker: the sandbox worker of agentos, build %s", id)
	if !trusted {
		fmt.Fprintf(os.Stderr, " (not usable by the pool: %s)", why)
	}
	fmt.Fprintln(os.Stderr, ".\nIt is started by agentos from the same directory, never by hand.")
	os.Exit(2)
}
