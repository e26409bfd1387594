package forge

import (
	"context"

	"github.com/agentos-run/agentos/actors/executor"
)

// ForgeFor is forge for caller (tests).
func ForgeFor(f *Forge, ctx context.Context, spec string, caller *executor.Caller, charge Charge) (Result, error) {
	return f.forge(ctx, "", spec, caller, charge)
}
