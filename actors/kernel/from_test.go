package kernel_test

import (
	"errors"
	"testing"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
)

// A process spawned From a token holds no more than it: the token's use
// count and grants carry over, and revoking it revokes the process's.
func TestSpawnFromToken(t *testing.T) {
	k := newKernel(t, kernel.Options{Logger: quiet})
	bearer := k.Authority().Mint("mcp-client", []capability.Grant{{Right: capability.Read, Scope: "tools/"}}, capability.Caveats{MaxUses: 1})
	if _, err := k.Spawn(block, kernel.SpawnOptions{From: &bearer, Grants: []capability.Grant{{Right: capability.Write}}}); !errors.Is(err, capability.ErrAmplify) {
		t.Fatalf("spawn with a grant the token lacks: %v, want ErrAmplify", err)
	}
	p := spawn(t, k, block, kernel.SpawnOptions{From: &bearer})
	if err := p.Check(capability.Read, "tools/a.ts"); err != nil {
		t.Fatalf("first check: %v", err)
	}
	if err := p.Check(capability.Read, "tools/a.ts"); !errors.Is(err, capability.ErrUsedUp) {
		t.Fatalf("second check of a one-use token's process: %v, want ErrUsedUp", err)
	}
	q := spawn(t, k, block, kernel.SpawnOptions{From: &bearer})
	k.Authority().Revoke(bearer.ID)
	if err := q.Check(capability.Read, "tools/a.ts"); !errors.Is(err, capability.ErrRevoked) {
		t.Fatalf("check after the bearer token was revoked: %v, want ErrRevoked", err)
	}
}
