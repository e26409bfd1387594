package forge

import (
	"context"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/driver/llm"
)

// ForgeFor is forge for caller (tests).
func ForgeFor(f *Forge, ctx context.Context, spec string, caller *execclient.Caller, charge Charge) (Result, error) {
	return f.forge(ctx, "", spec, caller, charge)
}

// ErrorOfDone is the Go error of a grain's Done (nil: it passed).
func ErrorOfDone(d *pb.Done) error { return errorOf(d.GetFailure()) }

// StagingDir is where candidates are tested (tests).
const StagingDir = stagingDir

// FirstRequest is the model request a forge of spec (no lessons) sends
// first (the floor benchmark sends the same).
func FirstRequest(spec string) llm.Request {
	conv := &conversation{system: systemPrompt, spec: spec}
	return llm.Request{Messages: conv.messages(false), Tools: []llm.ToolSpec{submitTool}}
}
