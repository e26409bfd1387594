//go:build linux

package confine

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const auditArch = unix.AUDIT_ARCH_AARCH64

// archPrologue is empty: a 32-bit (AArch32) task reports another arch and
// is killed by the arch check.
var archPrologue []bpf.Instruction

// deniedArch are the arm64 system calls that x86-64 does not have, or has
// under another name.
var deniedArch = []syscallNr{
	{"renameat", unix.SYS_RENAMEAT},
}
