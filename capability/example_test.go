package capability_test

import (
	"errors"
	"fmt"

	"github.com/agentos-run/agentos/capability"
)

// The kernel mints a token for an agent; the agent hands a narrower one to
// a helper; revoking the agent's token revokes the helper's too.
func ExampleAuthority() {
	auth, _ := capability.NewAuthority(nil, nil)
	agent := auth.Mint("agent-1", []capability.Grant{{Right: capability.Read, Scope: "tools/"}, {Right: capability.Exec, Scope: "tools/"}}, capability.Caveats{})
	helper, _ := auth.Delegate(agent, "helper-7", []capability.Grant{{Right: capability.Read, Scope: "tools/reports/"}}, capability.Caveats{MaxUses: 10})

	fmt.Println(auth.Check(helper, "helper-7", capability.Read, "tools/reports/june.ts"))
	err := auth.Check(helper, "helper-7", capability.Exec, "tools/reports/june.ts")
	fmt.Println(errors.Is(err, capability.ErrDenied))
	auth.Revoke(agent.ID)
	err = auth.Check(helper, "helper-7", capability.Read, "tools/reports/june.ts")
	fmt.Println(errors.Is(err, capability.ErrRevoked))
	// Output:
	// <nil>
	// true
	// true
}
