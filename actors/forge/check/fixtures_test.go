package check

import "github.com/agentos-run/agentos/internal/samples"

// fibTool is the reference tool: valid, risk low.
const fibTool = samples.FibTool
