package git_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/vfs"
)

// heldGate is a registration gate whose checks wait until released; it
// blocks the versions listed in block.
type heldGate struct {
	entered chan string // the new source of each check, as it starts
	release chan struct{}
	block   map[string]bool
	mu      sync.Mutex
	olds    []string // the previous source each check was given
}

func (g *heldGate) Check(ctx context.Context, path string, old, newSrc []byte) gate.Report {
	g.mu.Lock()
	g.olds = append(g.olds, string(old))
	g.mu.Unlock()
	g.entered <- string(newSrc)
	<-g.release
	return gate.Report{Path: path, Blocked: g.block[string(newSrc)]}
}

func startGated(t *testing.T, g git.Gater) (*gitclient.Client, string) {
	t.Helper()
	dir := t.TempDir()
	jail, err := vfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := sys.Root.Spawn(git.Props(git.Options{Jail: jail, Gate: g}))
	t.Cleanup(func() {
		_ = sys.Root.StopFuture(pid).Wait()
		jail.Close()
	})
	c := gitclient.New(sys.Root, pid)
	c.Timeout = 5 * time.Second
	return c, dir
}

// TestGateDoesNotBlockTheWriter: while the registration gate replays the
// runs of a changed tool, the git actor keeps answering (a Pull is
// answered before the gate ends); a second write of the same tool waits
// for the first and is gated against it; a version the gate blocks is
// refused with nothing written.
func TestGateDoesNotBlockTheWriter(t *testing.T) {
	g := &heldGate{entered: make(chan string, 4), release: make(chan struct{}), block: map[string]bool{"export default () => 4;\n": true}}
	c, dir := startGated(t, g)
	ctx := context.Background()
	const v1, v2, v3, v4 = "export default () => 1;\n", "export default () => 2;\n", "export default () => 3;\n", "export default () => 4;\n"
	if _, err := c.WriteFile(ctx, "tools/a.ts", []byte(v1)); err != nil { // new: not gated
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { _, err := c.WriteFile(ctx, "tools/a.ts", []byte(v2)); done <- err }()
	if got := <-g.entered; got != v2 {
		t.Fatalf("the gate checks %q, want v2", got)
	}
	go func() { _, err := c.WriteFile(ctx, "tools/a.ts", []byte(v3)); done <- err }()

	// The gate is still replaying: the actor answers anyway.
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := c.Pull(pctx)
	cancel()
	if !errors.Is(err, gitclient.ErrNoRepo) {
		t.Fatalf("a Pull while the gate runs: %v, want ErrNoRepo at once (the actor is blocked on the gate)", err)
	}
	select {
	case got := <-g.entered:
		t.Fatalf("the second write of the tool was gated (%q) before the first was written", got)
	default:
	}
	g.release <- struct{}{}
	if got := <-g.entered; got != v3 {
		t.Fatalf("the gate checks %q, want v3", got)
	}
	g.release <- struct{}{}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tools", "a.ts")); string(b) != v3 {
		t.Fatalf("tools/a.ts holds %q, want v3", b)
	}
	g.mu.Lock()
	olds := append([]string(nil), g.olds...)
	g.mu.Unlock()
	if len(olds) != 2 || olds[0] != v1 || olds[1] != v2 {
		t.Fatalf("the gate was given the previous versions %q, want v1 then v2", olds)
	}

	// A blocked version is refused, nothing written.
	go func() { _, err := c.WriteFile(ctx, "tools/a.ts", []byte(v4)); done <- err }()
	<-g.entered
	g.release <- struct{}{}
	if err := <-done; !errors.Is(err, gate.ErrBlocked) {
		t.Fatalf("a blocked write: %v, want ErrBlocked", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tools", "a.ts")); string(b) != v3 {
		t.Fatalf("tools/a.ts holds %q after a blocked write, want v3", b)
	}
}
