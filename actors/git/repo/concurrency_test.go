package repo_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/actors/git/repo"
)

// TestConcurrentWriters: 2, then 8 tool roots over one upstream, each
// persisting 10 distinct tools at the same moment: every tool is upstream,
// the history is linear and holds one commit per tool.
func TestConcurrentWriters(t *testing.T) {
	for _, nodes := range []int{2, 8} {
		t.Run(fmt.Sprintf("%d-nodes", nodes), func(t *testing.T) {
			const tools = 10
			up := newUpstream(t)
			dirs := make([]string, nodes)
			repos := make([]*repo.Repo, nodes)
			for i := range repos {
				dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))
				repos[i] = hydrate(t, dirs[i], up)
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, nodes*tools)
			for i := range repos {
				for j := 0; j < tools; j++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						p := fmt.Sprintf("tools/n%d/t%d.ts", i, j)
						<-start
						writeFile(t, dirs[i], p, "export default () => '"+p+"'")
						if _, err := repos[i].Persist(ctx, []string{p}, "write "+p); err != nil {
							errs <- fmt.Errorf("%s: %w", p, err)
						}
					}()
				}
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			files := upstreamFiles(t, up, "main")
			for i := 0; i < nodes; i++ {
				for j := 0; j < tools; j++ {
					p := fmt.Sprintf("tools/n%d/t%d.ts", i, j)
					if files[p] != "export default () => '"+p+"'" {
						t.Errorf("%s upstream = %q", p, files[p])
					}
				}
			}
			commits := history(t, up, "main")
			if want := 1 + nodes*tools; len(commits) != want {
				t.Fatalf("%d commits upstream, want %d (initial + one per tool)", len(commits), want)
			}
			seen := map[string]bool{}
			for _, c := range commits[:len(commits)-1] {
				m := strings.TrimSpace(c.Message)
				if seen[m] {
					t.Fatalf("commit %q twice", m)
				}
				seen[m] = true
			}
		})
	}
}

// TestDerivedFile: meta.json is derived: after concurrent writes it is
// exactly what Regenerate makes of the final tree, never a hand-merge.
func TestDerivedFile(t *testing.T) {
	const nodes, tools = 4, 5
	up := newUpstream(t)
	var wg sync.WaitGroup
	errs := make(chan error, nodes*tools)
	start := make(chan struct{})
	for i := 0; i < nodes; i++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))
		r := hydrate(t, dir, up, func(o *repo.Options) {
			o.Derived = []string{"meta.json"}
			o.Regenerate = listTools(dir)
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < tools; j++ {
				p := fmt.Sprintf("tools/n%d/t%d.ts", i, j)
				writeFile(t, dir, p, p)
				if err := listTools(dir)(); err != nil {
					errs <- err
					return
				}
				if _, err := r.Persist(ctx, []string{p}, "write "+p); err != nil {
					errs <- fmt.Errorf("%s: %w", p, err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	files := upstreamFiles(t, up, "main")
	if n := strings.Count(listing(files), "tools/"); n != nodes*tools {
		t.Fatalf("%d tools upstream, want %d", n, nodes*tools)
	}
	if files["meta.json"] != listing(files) {
		t.Fatalf("meta.json upstream is not the regenerated listing:\n%s\nwant\n%s", files["meta.json"], listing(files))
	}
	if len(history(t, up, "main")) != 1+nodes*tools {
		t.Fatal("not one commit per tool")
	}
}
