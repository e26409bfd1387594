//go:build !linux || !(amd64 || arm64)

package confine

import "runtime"

func applySeccomp() SeccompReport {
	return SeccompReport{Reason: "the worker filter is written for linux/amd64 and linux/arm64, not " + runtime.GOOS + "/" + runtime.GOARCH}
}

// DeniedSyscalls lists the system calls the worker filter refuses: none on
// this platform.
func DeniedSyscalls() []string { return nil }
