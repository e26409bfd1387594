package forge

import "context"

// Run asks the forge actor to reuse or forge a tool for Spec. Sender: the
// kernel (forge_tool), with RequestFuture. Reply: *Done.
//
// IMPORTANT: local only: Ctx and Charge cannot cross nodes.
type Run struct {
	Ctx    context.Context
	Spec   string
	Charge Charge
}

// Resume asks the forge actor to resume the forge run ID after a crash.
// Reply: *Done.
type Resume struct {
	Ctx    context.Context
	ID     string
	Charge Charge
}

// Done is the reply to Run and Resume.
type Done struct {
	Result Result
	Err    error
}
