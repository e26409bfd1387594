//go:build linux

package confine

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const auditArch = unix.AUDIT_ARCH_X86_64

// archPrologue kills a process that makes an x32 system call (number with
// bit 30 set): the x32 ABI shares AUDIT_ARCH_X86_64 with x86-64, so the
// arch check alone does not catch it, and its numbers would miss the list.
var archPrologue = []bpf.Instruction{
	bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1},
	retKill,
}

// deniedArch are the x86-64 system calls that arm64 does not have.
var deniedArch = []syscallNr{
	{"fork", unix.SYS_FORK}, {"vfork", unix.SYS_VFORK}, {"iopl", unix.SYS_IOPL}, {"ioperm", unix.SYS_IOPERM},
	{"uselib", unix.SYS_USELIB}, {"_sysctl", unix.SYS__SYSCTL}, {"modify_ldt", unix.SYS_MODIFY_LDT},
	{"open", unix.SYS_OPEN}, {"creat", unix.SYS_CREAT}, {"stat", unix.SYS_STAT}, {"lstat", unix.SYS_LSTAT},
	{"access", unix.SYS_ACCESS}, {"readlink", unix.SYS_READLINK}, {"mkdir", unix.SYS_MKDIR}, {"rmdir", unix.SYS_RMDIR},
	{"unlink", unix.SYS_UNLINK}, {"rename", unix.SYS_RENAME}, {"renameat", unix.SYS_RENAMEAT}, {"link", unix.SYS_LINK},
	{"symlink", unix.SYS_SYMLINK}, {"mknod", unix.SYS_MKNOD}, {"chmod", unix.SYS_CHMOD}, {"chown", unix.SYS_CHOWN},
	{"lchown", unix.SYS_LCHOWN}, {"utime", unix.SYS_UTIME}, {"utimes", unix.SYS_UTIMES}, {"futimesat", unix.SYS_FUTIMESAT},
	{"inotify_init", unix.SYS_INOTIFY_INIT},
}
