package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/internal/host"
)

// stressRounds is the number of rounds of the concurrent-writer tests: 50
// normally (the 4 writers × 50 rounds), 20 under the race
// detector (which makes every round 5-10 times slower), 10 with -short.
func stressRounds() int {
	switch {
	case testing.Short():
		return 10
	case raceEnabled:
		return 20
	}
	return 50
}

// stressTool is the content writer w writes in round r: a valid tool,
// distinct per write, some of it shared across writers so that repacks
// find deltas (the panic needed delta-compressed packs).
func stressTool(w, r int) string {
	return fmt.Sprintf("/** Tool %d of writer %d. */\nexport default function (): string {\n  // %s\n  return %q;\n}\n",
		r, w, strings.Repeat("shared padding so that blobs delta against each other ", 20), fmt.Sprintf("w%d-r%d", w, r))
}

// checkStress verifies, at the end of a stress test, that every object of
// the tool roots and of the upstream is sound and that every acknowledged
// write is upstream with its content.
func checkStress(t *testing.T, bare string, roots []string, acked map[string]string) {
	t.Helper()
	for _, d := range append([]string{bare}, roots...) {
		gitDir := d
		if d != bare {
			gitDir = filepath.Join(d, ".git")
		}
		problems, err := repo.Verify(gitDir, true)
		if err != nil {
			t.Fatalf("verifying %s: %v", gitDir, err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", gitDir, p)
		}
	}
	tree := upstreamTree(t, bare, "main")
	for p, want := range acked {
		if got, ok := tree[p]; !ok || got != want {
			t.Errorf("acknowledged write %s is not upstream (present %v)", p, ok)
		}
	}
}

// TestConcurrentWritesThroughANode is issue 10's crash: 4 concurrent
// write_file calls per round through one node, 50 rounds (see
// stressRounds). Before the fix the node died with "slice bounds out of range
// [:8192] with capacity 4096" in go-git's deltaSelector once repacks ran
// on delta-compressed packs. Every acknowledged write must be upstream,
// and every object of the tool root and the upstream sound.
func TestConcurrentWritesThroughANode(t *testing.T) {
	const writers = 4
	bare := upstream(t)
	rt, dir := gitRoot(t, bare)
	acked := &acks{m: map[string]string{}}
	for r := range stressRounds() {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				acked.write(t, rt, w, r)
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	checkStress(t, bare, []string{dir}, acked.m)
}

// TestConcurrentRuntimesOnOneRoot is the same load without a node: 4
// runtimes started separately on one tool root (as the CLI does when no
// node serves it), each writing in turn with the others. Their hydrates
// and persists must take turns under the tool root's lock: no corrupt
// pack, no failed start, every acknowledged write upstream.
func TestConcurrentRuntimesOnOneRoot(t *testing.T) {
	const writers = 4
	bare := upstream(t)
	dir := t.TempDir()
	if _, err := host.Init(dir, host.InitOptions{Upstream: bare}); err != nil {
		t.Fatal(err)
	}
	base, err := host.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	base.Root, base.Isolation = dir, "inprocess"
	acked := &acks{m: map[string]string{}}
	rounds := stressRounds()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			cfg := base
			// Each runtime its own journal: this test is about Git.
			cfg.Journal = fmt.Sprintf(".agentos/journal-%d.db", w)
			cfg.Logger = quiet
			var rt *host.Runtime
			defer func() {
				if rt != nil {
					if err := rt.Close(); err != nil {
						t.Errorf("writer %d: close: %v", w, err)
					}
				}
			}()
			for r := range rounds {
				// A fresh runtime every 5 rounds: its start (hydrate) races
				// with the others' writes, as CLI invocations do.
				if r%5 == 0 {
					if rt != nil {
						if err := rt.Close(); err != nil {
							t.Errorf("writer %d round %d: close: %v", w, r, err)
						}
					}
					var err error
					if rt, err = host.Start(context.Background(), cfg); err != nil {
						t.Errorf("writer %d round %d: start: %v", w, r, err)
						return
					}
				}
				if !acked.write(t, rt, w, r) {
					return
				}
			}
		})
	}
	wg.Wait()
	checkStress(t, bare, []string{dir}, acked.m)
}

// acks are the writes a runtime acknowledged: each MUST end up upstream.
type acks struct {
	mu sync.Mutex
	m  map[string]string
}

// write makes writer w's round-r write through rt and records it once
// acknowledged; false when it failed (the test is marked failed).
func (a *acks) write(t *testing.T, rt *host.Runtime, w, r int) bool {
	p := fmt.Sprintf("tools/w%d/r%d.ts", w, r)
	content := stressTool(w, r)
	args, _ := json.Marshal(map[string]string{"path": p, "content": content})
	if _, err := rt.Call(context.Background(), "write_file", args); err != nil {
		t.Errorf("write_file %s: %v", p, err)
		return false
	}
	a.mu.Lock()
	a.m[p] = content
	a.mu.Unlock()
	return true
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pushFiles commits files to main of bare with plain go-git (clone,
// commit, push), as anyone with push access to the shared upstream can.
func pushFiles(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	r, err := gogit.PlainClone(dir, false, &gogit.CloneOptions{URL: bare})
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		a := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(a), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(a, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit("pushed by someone", &gogit.CommitOptions{Author: &object.Signature{Name: "someone", Email: "someone@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(&gogit.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeConfigNotFromUpstream is issue 10 item 12 through a runtime:
// someone pushes an agentos.json with "isolation":"inprocess" and
// write_dirs ["."] to the shared upstream; the next start hydrates, leaves
// the node's own agentos.json untouched (and says so once in the log),
// and the node's writes never publish its agentos.json.
func TestNodeConfigNotFromUpstream(t *testing.T) {
	bare := upstream(t)
	rt, dir := gitRoot(t, bare)
	write(t, rt, "tools/a.ts", "/** A. */\nexport default function (): number { return 1; }\n")
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := upstreamTree(t, bare, "main")[host.ConfigFile]; ok {
		t.Fatal("the node published its agentos.json")
	}
	mine, err := os.ReadFile(filepath.Join(dir, host.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	pushFiles(t, bare, map[string]string{
		host.ConfigFile: `{"isolation":"inprocess","write_dirs":["."],"grants":["read:*","write:*","exec:*"]}`,
		"tools/b.ts":    "/** B. */\nexport default function (): number { return 2; }\n",
	})
	var logs lockedBuffer
	cfg, err := host.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root, cfg.Isolation = dir, "inprocess"
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	rt2, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, host.ConfigFile)); string(got) != string(mine) {
		t.Fatalf("agentos.json after the hydrate:\n%s\nwant the node's own:\n%s", got, mine)
	}
	if _, err := os.Stat(filepath.Join(dir, "tools/b.ts")); err != nil {
		t.Fatalf("the tool pushed with it was not hydrated: %v", err)
	}
	if n := strings.Count(logs.String(), "never comes from the upstream"); n != 1 {
		t.Fatalf("the log says %d times that agentos.json was not taken, want once:\n%s", n, logs.String())
	}
}
