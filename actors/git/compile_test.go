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

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/git/repo"
	"github.com/agentos-run/agentos/actors/registry"
	regclient "github.com/agentos-run/agentos/actors/registry/client"
	"github.com/agentos-run/agentos/vfs"
	"github.com/asynkron/protoactor-go/actor"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// upstreamHas reads path at the upstream branch main ("" and false when
// absent).
func upstreamHas(t *testing.T, up, p string) (string, bool) {
	t.Helper()
	r, err := gogit.PlainOpen(up)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File(p)
	if err != nil {
		return "", false
	}
	s, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}

// TestBrokenToolNeverShared is issue 11 item 3: write_file of a tool with
// a syntax error was committed and pushed to every agent sharing the
// upstream. It is written locally, not registered, and the reply says it
// is not persisted until it compiles; the write that fixes it persists it.
func TestBrokenToolNeverShared(t *testing.T) {
	up := filepath.Join(t.TempDir(), "up.git")
	if err := repo.InitBare(up, "main"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rp, err := repo.Hydrate(context.Background(), repo.Options{Dir: dir, Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	jail, err := vfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jail.Close()
	r, err := registry.Open(jail, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer sys.Shutdown()
	reg := sys.Root.Spawn(registry.Props(r))
	defer func() { _ = sys.Root.PoisonFuture(reg).Wait() }()
	pid := sys.Root.Spawn(git.Props(git.Options{Jail: jail, Repo: rp, Registry: regclient.New(sys.Root, reg)}))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	c := gitclient.New(sys.Root, pid)
	c.Timeout = time.Minute
	ctx := context.Background()

	const broken = "export default function (n: number) { return n +; }\n"
	w, err := c.WriteFile(ctx, "tools/math/bad.ts", []byte(broken))
	if !errors.Is(err, gitclient.ErrNotCompiled) || !w.Held || w.Commit != "" {
		t.Fatalf("broken write: %+v (err %v), want ErrNotCompiled, held, no commit", w, err)
	}
	for _, want := range []string{"tools/math/bad.ts:1:", "written locally", "not persisted or shared until it compiles"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the error %q does not say %q", err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tools", "math", "bad.ts")); string(b) != broken {
		t.Fatalf("the broken file is not kept locally: %q", b)
	}
	if _, ok := upstreamHas(t, up, "tools/math/bad.ts"); ok || len(r.List()) > 0 {
		t.Fatalf("a tool that does not compile reached the upstream or the registry (%v)", r.List())
	}
	// Another tool's write does not carry it along.
	if w, err := c.WriteFile(ctx, "tools/ok.ts", []byte("export default () => 1;\n")); err != nil || w.Commit == "" {
		t.Fatalf("good write: %+v %v", w, err)
	}
	if _, ok := r.Get("tools/ok.ts"); !ok {
		t.Fatal("the good tool was not registered through the registry actor")
	}
	if _, ok := upstreamHas(t, up, "tools/math/bad.ts"); ok {
		t.Fatal("the broken tool was swept into another write's commit")
	}
	// Patched to compile, it is persisted.
	w, err = c.PatchFile(ctx, "tools/math/bad.ts", "n +;", "n + 1;")
	if err != nil || w.Held || w.Commit == "" {
		t.Fatalf("fixing patch: %+v %v", w, err)
	}
	if s, ok := upstreamHas(t, up, "tools/math/bad.ts"); !ok || !strings.Contains(s, "n + 1;") {
		t.Fatalf("the fixed tool is not upstream: %q %v", s, ok)
	}
	// A patch that breaks it again is held; the upstream keeps the good one.
	if _, err = c.PatchFile(ctx, "tools/math/bad.ts", "n + 1;", "n + ;"); !errors.Is(err, gitclient.ErrNotCompiled) {
		t.Fatalf("breaking patch: %v", err)
	}
	if s, _ := upstreamHas(t, up, "tools/math/bad.ts"); !strings.Contains(s, "n + 1;") {
		t.Fatalf("a breaking patch reached the upstream: %q", s)
	}
}
