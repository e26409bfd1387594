package forge

import (
	"fmt"

	epb "github.com/agentos-run/agentos/actors/executor/executorpb"
	pb "github.com/agentos-run/agentos/actors/forge/forgepb"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
)

// ToolsDir is where a forge writes the tools it makes (see checkPath).
const ToolsDir = "tools/"

// authorizeCaller checks that a forge may run for c, the caller a Run
// names (what names the request, for the refusal): its token MUST verify
// with auth, be held by the caller it names, and grant what forge_tool
// needs locally: llm (the forge asks the model, charged to the caller) and
// write on ToolsDir (it writes a tool). A Run without a caller (the
// operator's own forge: nothing checked, nothing charged) is accepted only
// from this node's own process (local: it arrived in a system.Local).
// Errors wrap system.ErrUnauthenticated or capability.ErrDenied.
func authorizeCaller(auth *capability.Authority, local bool, c *epb.Caller, what string) error {
	if c == nil || c.GetToken() == "" {
		_, err := system.Authenticate(auth, local, "", what+" without a caller")
		return err
	}
	from, err := system.Authenticate(auth, local, c.GetToken(), what)
	if err != nil {
		return err
	}
	if from.Token.Holder != c.GetHolder() {
		return fmt.Errorf("%w: %s names the caller %q and carries the token of %q", system.ErrUnauthenticated, what, c.GetHolder(), from.Token.Holder)
	}
	if err := from.Permit(capability.LLM, ""); err != nil {
		return fmt.Errorf("%s: a forge asks the model for its caller: %w", what, err)
	}
	if err := from.Permit(capability.Write, ToolsDir); err != nil {
		return fmt.Errorf("%s: a forge writes a tool under %s for its caller: %w", what, ToolsDir, err)
	}
	return nil
}

// refused is the Done that answers a forge request refused by
// authorizeCaller.
func refused(err error) *pb.Done {
	return doneOf(Result{}, err)
}
