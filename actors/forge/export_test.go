package forge

import (
	"context"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
)

// ForgeFor is forge for caller (tests).
func ForgeFor(f *Forge, ctx context.Context, spec string, caller *execclient.Caller, charge Charge) (Result, error) {
	return f.forge(ctx, "", spec, caller, charge)
}

// ErrorOfDone is the Go error of a grain's Done (nil: it passed).
func ErrorOfDone(d *pb.Done) error { return errorOf(d.GetFailure()) }

// StagingDir is where candidates are tested (tests).
const StagingDir = stagingDir
