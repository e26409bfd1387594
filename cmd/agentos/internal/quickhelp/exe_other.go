//go:build !linux

package quickhelp

// exeModinfo: read from the executable on Linux only; elsewhere the
// command answers the help itself.
func exeModinfo() (string, bool) { return "", false }
