package kernel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
	kernelclient "github.com/agentos-run/agentos/actors/kernel/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

// A request carrying a process's token is checked as that process's own
// call, wherever it comes from: it spawns only its own children, signals
// and charges only itself and its descendants, and never snapshots or
// restores; a forged token is refused as unauthenticated. The node's own
// client (no token, same process) may do everything.
func TestKernelActorChecksTheCallersToken(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	node, _ := startKernelActor(t, k)
	ctx := tctx(t)
	if err := k.RegisterImage("idle", blocker); err != nil {
		t.Fatal(err)
	}
	a := spawn(t, k, blocker, kernel.SpawnOptions{Grants: []capability.Grant{{Right: capability.Spawn}, {Right: capability.Read, Scope: "tools/"}}})
	b := spawn(t, k, blocker, kernel.SpawnOptions{})
	ta, ok := a.Token()
	if !ok {
		t.Fatal("a has no token")
	}
	asA := node
	asA.Token = ta.Encode()

	// Spawn: never a root process; a child of a, with a's grants at most.
	if _, err := asA.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Grants: []capability.Grant{{Right: capability.Write}}}); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("root spawn with a's token: %v, want capability.ErrDenied", err)
	}
	if _, err := asA.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: b.PID()}); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("spawn as b with a's token: %v, want capability.ErrDenied", err)
	}
	if _, err := asA.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: a.PID(), Grants: []capability.Grant{{Right: capability.Write}}}); !errors.Is(err, capability.ErrAmplify) {
		t.Errorf("a spawning a child with a right it lacks: %v, want capability.ErrAmplify", err)
	}
	child, err := asA.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: a.PID(), Grants: []capability.Grant{{Right: capability.Read, Scope: "tools/x"}}})
	if err != nil {
		t.Fatalf("a spawning its own child: %v", err)
	}
	// Signal and charge: itself and its descendants only.
	if err := asA.Kill(ctx, b.PID(), "a"); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("a killing b: %v, want capability.ErrDenied", err)
	}
	if err := asA.Charge(ctx, b.PID(), "llm_tokens", 1); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("a charging b: %v, want capability.ErrDenied", err)
	}
	if err := asA.Charge(ctx, child, "llm_tokens", 1); err != nil {
		t.Errorf("a charging its child: %v", err)
	}
	if err := asA.Kill(ctx, child, "a"); err != nil {
		t.Errorf("a killing its child: %v", err)
	}
	// Snapshot and restore: the operator's only.
	if _, err := asA.Snapshot(ctx, "1", false, "a"); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("snapshot with a's token: %v, want capability.ErrDenied", err)
	}
	if _, _, err := asA.Fork(ctx, "x", ""); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("fork with a's token: %v, want capability.ErrDenied", err)
	}
	// Another node charges with its node token (kernel.RightCharge).
	peer := node
	peer.Token = kernel.NodeToken(k.Authority(), "127.0.0.1:1").Encode()
	if err := peer.Charge(ctx, b.PID(), "llm_tokens", 1); err != nil {
		t.Errorf("a node charging b with its node token: %v", err)
	}
	if err := peer.Kill(ctx, b.PID(), "peer"); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("a node token killing b: %v, want capability.ErrDenied", err)
	}
	// A token signed with another key is refused as unauthenticated.
	other, err := capability.New(capability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forged := node
	forged.Token = other.Mint(a.Holder(), []capability.Grant{{Right: capability.Spawn}}, capability.Caveats{}).Encode()
	if _, err := forged.Spawn(ctx, kernelclient.SpawnRequest{Image: "idle", Parent: a.PID()}); !errors.Is(err, system.ErrUnauthenticated) || !strings.Contains(err.Error(), "signature") {
		t.Errorf("spawn with a forged token: %v, want system.ErrUnauthenticated saying the signature does not match", err)
	}
	if b.Account().Used("llm_tokens") != 1 {
		t.Errorf("b was charged %v, want 1 (the node token's charge only)", b.Account().Used("llm_tokens"))
	}
	// The node itself may do everything.
	if err := node.Kill(ctx, b.PID(), "operator"); err != nil {
		t.Errorf("the node killing b: %v", err)
	}
}
