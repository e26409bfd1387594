package repo_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git/repo"
)

const crashChildEnv = "AGENTOS_REPO_CRASH_CHILD"

// crashChild runs in a child process (see TestMain): it hydrates the tool
// root and persists tools in a loop until it is killed, printing each
// persisted path and content.
func crashChild() {
	dir, up := os.Getenv("AGENTOS_REPO_CRASH_DIR"), os.Getenv("AGENTOS_REPO_CRASH_UP")
	start, _ := strconv.Atoi(os.Getenv("AGENTOS_REPO_CRASH_START"))
	r, err := repo.Hydrate(context.Background(), repo.Options{
		Dir: dir, Upstream: up, Derived: []string{"meta.json"}, Regenerate: listTools(dir),
	})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	for i := start; ; i++ {
		p := fmt.Sprintf("tools/crash/t%d.ts", i)
		content := fmt.Sprintf("export default () => %d // %s", i, strings.Repeat("x", i%500))
		a := filepath.Join(dir, filepath.FromSlash(p))
		_ = os.MkdirAll(filepath.Dir(a), 0o755)
		// As the git actor: the intent is on disk before the file, so that
		// recovery commits a write the kill cut in half (and nothing else).
		if err := r.Intend(p, []byte(content)); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		// Written whole or not at all, as the jail writes (temporary file, then rename).
		tmp := filepath.Join(dir, "crash-write.tmp") // outside tools/: never listed
		err := os.WriteFile(tmp, []byte(content), 0o644)
		if err == nil {
			err = os.Rename(tmp, a)
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if err := listTools(dir)(); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if _, err := r.Persist(context.Background(), []string{p}, "write "+p); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("persisted %s %d\n", p, i)
	}
}

// TestKillLeavesNoLock kills a persisting child process at random points:
// no *.lock file is ever left, every tool it reported persisted is
// upstream, and the next Hydrate and Persist work. A tool written but not
// yet persisted when the kill came is recovered by the next Hydrate under
// its own commit (issue 11 item 2): every commit of a write holds exactly
// the written tool and meta.json, never a file another write left behind;
// and the upstream verifies (every pack against its index).
func TestKillLeavesNoLock(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	up := newUpstream(t)
	dir := t.TempDir()
	want := map[string]string{}
	const trials = 10
	for trial := 0; trial < trials; trial++ {
		start := trial * 1000
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"=1",
			"AGENTOS_REPO_CRASH_DIR="+dir, "AGENTOS_REPO_CRASH_UP="+up, "AGENTOS_REPO_CRASH_START="+strconv.Itoa(start))
		out, err := cmd.StdoutPipe()
		must(t, err)
		cmd.Stderr = os.Stderr
		must(t, cmd.Start())
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// Kill at a random point: during the child's Hydrate or its loop.
		kill := time.After(time.Duration(5+rand.IntN(150)) * time.Millisecond)
		persisted := 0
	loop:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break loop
				}
				if strings.HasPrefix(l, "error") && kill != nil {
					t.Errorf("trial %d: child: %s", trial, l)
				}
				if f := strings.Fields(l); len(f) == 3 && f[0] == "persisted" {
					i, _ := strconv.Atoi(f[2])
					want[f[1]] = fmt.Sprintf("export default () => %d // %s", i, strings.Repeat("x", i%500))
					persisted++
				}
			case <-kill:
				must(t, cmd.Process.Kill()) // SIGKILL
				kill = nil
			}
		}
		_ = cmd.Wait()
		if l := lockFiles(filepath.Join(dir, ".git")); len(l) > 0 {
			t.Fatalf("trial %d: lock files left after SIGKILL: %v", trial, l)
		}
		if l := lockFiles(up); len(l) > 0 {
			t.Fatalf("trial %d: lock files left in the upstream: %v", trial, l)
		}
		t.Logf("trial %d: killed after %d persists", trial, persisted)

		// The next Hydrate and Persist work, and nothing reported is lost.
		r, err := repo.Hydrate(ctx, repo.Options{Dir: dir, Upstream: up, Derived: []string{"meta.json"}, Regenerate: listTools(dir)})
		if err != nil {
			t.Fatalf("trial %d: Hydrate after kill: %v", trial, err)
		}
		for _, e := range mustReadDir(t, filepath.Join(dir, ".git")) {
			if strings.HasPrefix(e, "agentos-tmp-") {
				t.Fatalf("trial %d: stale temporary file after Hydrate: %s", trial, e)
			}
		}
		p := fmt.Sprintf("tools/after/t%d.ts", trial)
		writeFile(t, dir, p, p)
		must(t, listTools(dir)())
		if _, err := r.Persist(ctx, []string{p}, "after kill"); err != nil {
			t.Fatalf("trial %d: Persist after kill: %v", trial, err)
		}
		want[p] = p
		must(t, r.Close())
		files := upstreamFiles(t, up, "main")
		for path, content := range want {
			if files[path] != content {
				t.Fatalf("trial %d: %s upstream = %q, want %q", trial, path, files[path], content)
			}
		}
		if problems, err := repo.Verify(up, true); err != nil || len(problems) > 0 {
			t.Fatalf("trial %d: the upstream after the kill: %v %v", trial, problems, err)
		}
		if files["meta.json"] != listing(files) {
			t.Fatalf("trial %d: meta.json upstream is not the listing of the tools", trial)
		}
		for _, c := range history(t, up, "main") {
			msg := strings.TrimSpace(c.Message)
			var tools []string
			for _, p := range commitPaths(t, c) {
				if p != "meta.json" {
					tools = append(tools, p)
				}
			}
			written, isWrite := strings.CutPrefix(msg, "write ")
			switch {
			case isWrite && (len(tools) != 1 || tools[0] != written),
				msg == "after kill" && (len(tools) != 1 || !strings.HasPrefix(tools[0], "tools/after/")):
				t.Fatalf("trial %d: commit %q holds %v: a write persists exactly its own tool (and meta.json)", trial, msg, tools)
			}
		}
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
