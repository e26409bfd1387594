package repo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// A node hydrates its tool root from a bare upstream, forges a tool and
// persists it; the next node finds it.
func ExampleHydrate() {
	base, _ := os.MkdirTemp("", "agentos-example-")
	defer os.RemoveAll(base)
	upstream := filepath.Join(base, "tools.git")
	if err := repo.InitBare(upstream, "main"); err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	a, err := repo.Hydrate(ctx, repo.Options{Dir: filepath.Join(base, "node-a"), Upstream: upstream})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	tool := filepath.Join(base, "node-a", "tools", "hello.ts")
	_ = os.MkdirAll(filepath.Dir(tool), 0o755)
	_ = os.WriteFile(tool, []byte(`export default () => "hello"`), 0o644)
	p, err := a.Persist(ctx, []string{"tools/hello.ts"}, "write tools/hello.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pushed to", p.Branch, "in", p.Attempts, "attempt")

	b, err := repo.Hydrate(ctx, repo.Options{Dir: filepath.Join(base, "node-b"), Upstream: upstream})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	got, _ := os.ReadFile(filepath.Join(base, "node-b", "tools", "hello.ts"))
	fmt.Println(string(got))
	// Output:
	// pushed to main in 1 attempt
	// export default () => "hello"
}
