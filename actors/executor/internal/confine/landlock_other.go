//go:build !linux

package confine

func applyLandlock(Restrictor) LandlockReport {
	return LandlockReport{Reason: "Landlock is a Linux feature"}
}

func allThreads(int) error { return nil }

func noNewPrivs() bool { return false }
