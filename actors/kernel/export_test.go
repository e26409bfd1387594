package kernel

// GateWaiters is how many goroutines of p are blocked in Gate (the process
// is stopped): a test waits for it instead of sleeping.
func GateWaiters(p *Process) int { return int(p.gated.Load()) }
