package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/internal/host"
)

// Lay out a tool root, then read its configuration back: every default is
// spelled out in agentos.json, and the configuration turns into the options
// of the parts (here the executor's).
func ExampleInit() {
	base, _ := os.MkdirTemp("", "agentos-example")
	defer os.RemoveAll(base)
	dir := filepath.Join(base, "root")
	created, err := host.Init(dir, host.InitOptions{NoGit: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(created)
	cfg, err := host.LoadConfig(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := cfg.ExecutorOptions(dir)
	fmt.Println(opts.ToolsDir, opts.Isolation, opts.Limits.Timeout, opts.Limits.MemoryBytes>>20, "MiB")
	// Output:
	// [tools/ agentos.json meta.json .gitignore]
	// tools process 5s 256 MiB
}
