//go:build unix

package mcpdriver

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own (its pid is the
// group's id), so that killGroup reaches its children too.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills every process left in the group pgid (none left: no
// error). The group's id cannot be reused while a member lives.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
