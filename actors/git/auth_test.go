package git_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentos-run/agentos/actors/git"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/vfs"
)

// Protected names the node's policy and state whatever the spelling, and
// personas/ for every writer but the node.
func TestProtected(t *testing.T) {
	for _, c := range []struct {
		path          string
		byNode, byAny bool // protected for the node, for a process
	}{
		{"agentos.json", true, true},
		{"./agentos.json", true, true},
		{"Agentos.JSON", true, true},
		{".agentos/approvals.json", true, true},
		{"tools/.git/config", true, true},
		{".GIT/HEAD", true, true},
		{"personas/coder.json", false, true},
		{"personas", false, true},
		{"tools/agentos.json", false, false},
		{"tools/personas/x.ts", false, false},
		{"tools/x.ts", false, false},
	} {
		if got := git.Protected(c.path, true) != ""; got != c.byNode {
			t.Errorf("Protected(%q, node) = %v, want %v", c.path, got, c.byNode)
		}
		if got := git.Protected(c.path, false) != ""; got != c.byAny {
			t.Errorf("Protected(%q, process) = %v, want %v", c.path, got, c.byAny)
		}
	}
	// A configured personas directory (agents.personas_dir) is the node's too.
	if git.Protected("team/prompts/coder.json", false, "team/prompts/") == "" || git.Protected("team/prompts/coder.json", true, "team/prompts") != "" {
		t.Error("a configured personas directory is not written by processes only")
	}
	if git.Protected("team/promptsx.json", false, "team/prompts") != "" {
		t.Error("a sibling of the personas directory is protected")
	}
}

// A write carrying a token is checked against its grants (write on the
// path) and refused on personas/ whatever it grants; a token the actor's
// authority did not sign is unauthenticated; an actor without an
// authority refuses every token.
func TestWriteChecksTheCallersToken(t *testing.T) {
	dir := t.TempDir()
	jail, err := vfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := capability.New(capability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := sys.Root.Spawn(git.Props(git.Options{Jail: jail, Authority: auth}))
	bare := sys.Root.Spawn(git.Props(git.Options{Jail: jail}))
	t.Cleanup(func() {
		_ = sys.Root.StopFuture(pid).Wait()
		_ = sys.Root.StopFuture(bare).Wait()
		jail.Close()
	})
	node := gitclient.Client{PID: pid, Root: sys.Root, Timeout: 5 * time.Second}
	ctx := context.Background()
	tools := auth.Mint("pid:7", []capability.Grant{{Right: capability.Write, Scope: "tools/"}}, capability.Caveats{})
	all := auth.Mint("pid:8", []capability.Grant{{Right: capability.Write}}, capability.Caveats{})
	if _, err := node.As(tools.Encode()).WriteFile(ctx, "tools/a.txt", []byte("a")); err != nil {
		t.Errorf("write within the grant: %v", err)
	}
	if _, err := node.As(tools.Encode()).WriteFile(ctx, "data/a.txt", []byte("a")); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("write outside the grant: %v, want capability.ErrDenied", err)
	}
	if _, err := node.As(all.Encode()).WriteFile(ctx, "personas/coder.json", []byte("{}")); !errors.Is(err, gitclient.ErrProtected) {
		t.Errorf("personas/ with a grant on everything: %v, want gitclient.ErrProtected", err)
	}
	if _, err := node.WriteFile(ctx, "personas/coder.json", []byte("{}")); err != nil {
		t.Errorf("personas/ by the node: %v", err)
	}
	other, _ := capability.New(capability.Options{})
	forged := other.Mint("pid:7", []capability.Grant{{Right: capability.Write}}, capability.Caveats{})
	if _, err := node.As(forged.Encode()).WriteFile(ctx, "tools/b.txt", []byte("b")); !errors.Is(err, system.ErrUnauthenticated) {
		t.Errorf("write with a token of another key: %v, want system.ErrUnauthenticated", err)
	}
	auth.Revoke(tools.ID)
	if _, err := node.As(tools.Encode()).WriteFile(ctx, "tools/c.txt", []byte("c")); !errors.Is(err, system.ErrUnauthenticated) {
		t.Errorf("write with a revoked token: %v, want system.ErrUnauthenticated", err)
	}
	noAuth := gitclient.Client{PID: bare, Root: sys.Root, Timeout: 5 * time.Second}
	if _, err := noAuth.As(all.Encode()).WriteFile(ctx, "tools/d.txt", []byte("d")); !errors.Is(err, system.ErrUnauthenticated) {
		t.Errorf("a token to an actor without an authority: %v, want system.ErrUnauthenticated", err)
	}
	for _, f := range []string{"tools/b.txt", "tools/c.txt", "tools/d.txt", "data/a.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}
