package git_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
)

func start(t *testing.T) (*gitclient.Client, string) {
	t.Helper()
	dir := t.TempDir()
	jail, err := vfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := sys.Root.Spawn(git.Props(git.Options{Jail: jail}))
	t.Cleanup(func() {
		_ = sys.Root.StopFuture(pid).Wait()
		jail.Close()
	})
	c := gitclient.New(sys.Root, pid)
	c.Timeout = 5 * time.Second
	return c, dir
}

func TestWriteAndPatch(t *testing.T) {
	c, dir := start(t)
	ctx := context.Background()
	w, err := c.WriteFile(ctx, "tools/a.ts", []byte("let x = 1; let y = 1;"))
	if err != nil || !w.Created || w.Bytes != 21 || w.Hash != transpile.Hash([]byte("let x = 1; let y = 1;")) {
		t.Fatalf("write: %+v %v", w, err)
	}
	if w, _ := c.WriteFile(ctx, "tools/a.ts", []byte("let x = 1; let y = 1;")); w.Created {
		t.Fatal("overwrite reported as created")
	}
	w, err = c.PatchFile(ctx, "tools/a.ts", "= 1", "= 2")
	b, _ := os.ReadFile(filepath.Join(dir, "tools", "a.ts"))
	if err != nil || string(b) != "let x = 2; let y = 1;" {
		t.Fatalf("patch replaces the first match only: %+v %v %q", w, err, b)
	}
	if _, err = c.PatchFile(ctx, "tools/a.ts", "z = 3", ""); !errors.Is(err, gitclient.ErrSearchNotFound) {
		t.Fatalf("absent search: %v", err)
	}
	if _, err := c.PatchFile(ctx, "tools/a.ts", "", "x"); !errors.Is(err, gitclient.ErrEmptySearch) {
		t.Fatalf("empty search: %v", err)
	}
	if _, err := c.WriteFile(ctx, "../escape.ts", []byte("x")); !errors.Is(err, vfs.ErrSecurity) {
		t.Fatalf("escape: %v", err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "tools", "a.ts"))
	if string(b) != "let x = 2; let y = 1;" {
		t.Fatalf("a failed patch changed the file: %q", b)
	}
}

// Concurrent patches of one file are serialized: none is lost.
func TestPatchesSerialized(t *testing.T) {
	c, dir := start(t)
	ctx := context.Background()
	const n = 50
	content := ""
	for i := range n {
		content += fmt.Sprintf("[%d]", i)
	}
	if _, err := c.WriteFile(ctx, "tools/log.txt", []byte(content)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := c.PatchFile(ctx, "tools/log.txt", fmt.Sprintf("[%d]", i), "."); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "tools", "log.txt"))
	if string(b) != strings.Repeat(".", n) {
		t.Fatalf("after %d concurrent patches: %q", n, b)
	}
}
