package kerneltools

// SetAfterGate sets the hook called between the gate's judgment of a run
// and the run (nil: none).
func SetAfterGate(f func(path string)) { afterGate = f }
