package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
)

// Issue 25 item 2: a process holding a write grant on the whole root (the
// approval gate off, isolation in-process) cannot rewrite the node's
// policy or state through write_file or patch_file: agentos.json, .agentos/,
// .git and personas/ are refused at the git actor, whatever the grant, and
// the refusal says why. The node itself still saves personas.
func TestKernelToolsNeverWriteTheNodesPolicy(t *testing.T) {
	root := t.TempDir()
	if _, err := host.Init(root, host.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root, cfg.Isolation, cfg.Logger = root, "inprocess", quiet
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	policy, err := os.ReadFile(filepath.Join(root, "agentos.json"))
	if err != nil {
		t.Fatal(err)
	}
	idle := func(ctx context.Context, _ *kernel.Process) error { <-ctx.Done(); return nil }
	p, err := rt.Kernel().Spawn(idle, kernel.SpawnOptions{Name: "rewriter", Grants: []capability.Grant{
		{Right: capability.Write}, {Right: capability.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := rt.ToolsFor(p, "write_file", "patch_file")
	if err != nil {
		t.Fatal(err)
	}
	write, patch := tools[0], tools[1]
	for _, path := range []string{"agentos.json", "./agentos.json", "AGENTOS.JSON", "personas/coder.json", "personas/new.json", ".agentos/approvals.json", "tools/.git/config", ".git/hooks/post-commit"} {
		args, _ := json.Marshal(map[string]string{"path": path, "content": `{"isolation":"inprocess","approval":{"enabled":false}}`})
		_, err := write.Call(ctx, args)
		if err == nil {
			t.Errorf("write_file %s: written, want a refusal", path)
			continue
		}
		// .git and .agentos may be refused earlier by the jail (invalid path);
		// agentos.json and personas/ reach the git actor's rule.
		if (strings.Contains(strings.ToLower(path), "agentos.json") || strings.HasPrefix(path, "personas/")) && !errors.Is(err, gitclient.ErrProtected) {
			t.Errorf("write_file %s: %v, want gitclient.ErrProtected", path, err)
		}
		t.Logf("write_file %s: %v", path, err)
	}
	args, _ := json.Marshal(map[string]string{"path": "agentos.json", "search": "{", "replace": "{\"isolation\":\"inprocess\","})
	if _, err := patch.Call(ctx, args); !errors.Is(err, gitclient.ErrProtected) {
		t.Errorf("patch_file agentos.json: %v, want gitclient.ErrProtected", err)
	} else if !strings.Contains(err.Error(), "policy") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(root, "agentos.json")); string(after) != string(policy) {
		t.Errorf("agentos.json changed:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(root, "personas", "new.json")); err == nil {
		t.Error("personas/new.json was written by a process")
	}
	// The same grant still writes a tool.
	args, _ = json.Marshal(map[string]string{"path": "tools/ok.ts", "content": "/** ok */\nexport default function (): string { return \"ok\"; }\n"})
	if _, err := write.Call(ctx, args); err != nil {
		t.Errorf("write_file tools/ok.ts: %v", err)
	}
	// The node itself (agentos persona save) still writes personas/.
	if _, err := rt.Node().WriteFile(ctx, "personas/by-node.json", []byte(`{}`)); err != nil {
		t.Errorf("the node's own write of personas/by-node.json: %v", err)
	}
	if _, err := rt.Node().WriteFile(ctx, "agentos.json", []byte(`{}`)); !errors.Is(err, gitclient.ErrProtected) {
		t.Errorf("the node's own write of agentos.json through the git actor: %v, want gitclient.ErrProtected", err)
	}
}
