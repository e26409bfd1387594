package git_test

import (
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
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
)

func start(t *testing.T) (*actor.RootContext, *actor.PID, string) {
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
	return sys.Root, pid, dir
}

func ask(t *testing.T, root *actor.RootContext, pid *actor.PID, msg any) *git.Written {
	t.Helper()
	res, err := root.RequestFuture(pid, msg, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	return res.(*git.Written)
}

func TestWriteAndPatch(t *testing.T) {
	root, pid, dir := start(t)
	w := ask(t, root, pid, &git.WriteFile{Path: "tools/a.ts", Content: []byte("let x = 1; let y = 1;")})
	if w.Err != nil || !w.Created || w.Bytes != 21 || w.Hash != transpile.Hash([]byte("let x = 1; let y = 1;")) {
		t.Fatalf("write: %+v", w)
	}
	if w := ask(t, root, pid, &git.WriteFile{Path: "tools/a.ts", Content: []byte("let x = 1; let y = 1;")}); w.Created {
		t.Fatal("overwrite reported as created")
	}
	w = ask(t, root, pid, &git.PatchFile{Path: "tools/a.ts", Search: "= 1", Replace: "= 2"})
	b, _ := os.ReadFile(filepath.Join(dir, "tools", "a.ts"))
	if w.Err != nil || string(b) != "let x = 2; let y = 1;" {
		t.Fatalf("patch replaces the first match only: %+v %q", w, b)
	}
	w = ask(t, root, pid, &git.PatchFile{Path: "tools/a.ts", Search: "z = 3", Replace: ""})
	if !errors.Is(w.Err, git.ErrSearchNotFound) {
		t.Fatalf("absent search: %v", w.Err)
	}
	if w := ask(t, root, pid, &git.PatchFile{Path: "tools/a.ts", Replace: "x"}); !errors.Is(w.Err, git.ErrEmptySearch) {
		t.Fatalf("empty search: %v", w.Err)
	}
	if w := ask(t, root, pid, &git.WriteFile{Path: "../escape.ts", Content: []byte("x")}); !errors.Is(w.Err, vfs.ErrSecurity) {
		t.Fatalf("escape: %v", w.Err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "tools", "a.ts"))
	if string(b) != "let x = 2; let y = 1;" {
		t.Fatalf("a failed patch changed the file: %q", b)
	}
}

// Concurrent patches of one file are serialized: none is lost.
func TestPatchesSerialized(t *testing.T) {
	root, pid, dir := start(t)
	const n = 50
	content := ""
	for i := range n {
		content += fmt.Sprintf("[%d]", i)
	}
	ask(t, root, pid, &git.WriteFile{Path: "tools/log.txt", Content: []byte(content)})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if w := ask(t, root, pid, &git.PatchFile{Path: "tools/log.txt", Search: fmt.Sprintf("[%d]", i), Replace: "."}); w.Err != nil {
				t.Error(w.Err)
			}
		})
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "tools", "log.txt"))
	if string(b) != strings.Repeat(".", n) {
		t.Fatalf("after %d concurrent patches: %q", n, b)
	}
}
