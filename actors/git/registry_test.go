package git_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/registry"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/vfs"
)

// withRegistry starts a registry actor and a git actor that registers
// through it, on a fresh tool root.
func withRegistry(t *testing.T) (*actor.ActorSystem, *gitclient.Client, *registry.Registry, *actor.PID, string) {
	t.Helper()
	dir := t.TempDir()
	jail, err := vfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.Open(jail, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	reg := sys.Root.Spawn(registry.Props(r))
	rc := regclient.New(sys.Root, reg)
	rc.Timeout = 5 * time.Second
	pid := sys.Root.Spawn(git.Props(git.Options{Jail: jail, Registry: rc}))
	t.Cleanup(func() {
		_ = sys.Root.StopFuture(pid).Wait()
		_ = sys.Root.PoisonFuture(reg).Wait()
		sys.Shutdown()
		r.Close()
		jail.Close()
	})
	c := gitclient.New(sys.Root, pid)
	c.Timeout = 10 * time.Second
	return sys, c, r, reg, dir
}

// TestWritesRegisterThroughTheRegistryActor: a tool written through the
// git actor is registered by the registry actor (Register message); a data
// file is written and not registered; a registry that refuses (closed) or
// does not answer (stopped) fails the write, which says the file was
// written but not registered, with the registry's sentinel error.
func TestWritesRegisterThroughTheRegistryActor(t *testing.T) {
	sys, c, r, reg, dir := withRegistry(t)
	ctx := context.Background()

	const src = "/** Adds one. */\nexport default function inc(n: number) { return n + 1; }\n"
	if _, err := c.WriteFile(ctx, "tools/math/inc.ts", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if tool, ok := r.Get("tools/math/inc.ts"); !ok || tool.Version != 1 || tool.Description != "Adds one." {
		t.Fatalf("tool not registered by the write: %+v %v", tool, ok)
	}
	if _, err := c.PatchFile(ctx, "tools/math/inc.ts", "n + 1", "n + 2"); err != nil {
		t.Fatal(err)
	}
	if tool, _ := r.Get("tools/math/inc.ts"); tool.Version != 2 {
		t.Fatalf("the patch did not re-register the tool: version %d, want 2", tool.Version)
	}
	if _, err := c.WriteFile(ctx, "tools/data/rates.json", []byte(`{"eur":1}`)); err != nil {
		t.Fatalf("a data file (not a tool) must be written without error: %v", err)
	}
	if _, ok := r.Get("tools/data/rates.json"); ok {
		t.Fatal("a data file was registered")
	}

	r.Close()
	w, err := c.WriteFile(ctx, "tools/b.ts", []byte("export default () => 2;\n"))
	if !errors.Is(err, regclient.ErrClosed) || !strings.Contains(err.Error(), "written but not registered") || w.Path != "tools/b.ts" || w.Hash == "" {
		t.Fatalf("closed registry: %+v %v, want registry.ErrClosed and 'written but not registered'", w, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tools", "b.ts")); string(b) != "export default () => 2;\n" {
		t.Fatalf("the file was not written: %q", b)
	}

	if err := sys.Root.StopFuture(reg).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFile(ctx, "tools/c.ts", []byte("export default () => 3;\n")); !errors.Is(err, regclient.ErrUnavailable) {
		t.Fatalf("stopped registry actor: %v, want registry.ErrUnavailable", err)
	}
}
