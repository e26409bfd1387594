//go:build !unix

package mcpdriver

import "os/exec"

// ownGroup does nothing where there are no process groups: the server's
// own process is still ended by its session's close.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing where there are no process groups.
func killGroup(int) {}
