//go:build !linux

package confine

func applyLandlock() LandlockReport { return LandlockReport{Reason: "Landlock is a Linux feature"} }

func noNewPrivs() bool { return false }
