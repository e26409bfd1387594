//go:build unix

package registry

import (
	"io/fs"
	"syscall"
)

// inodeCtime returns fi's inode and change time (ns): a file rewritten with
// its size and modification time restored still changes them.
func inodeCtime(fi fs.FileInfo) (ino, ctime int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return int64(st.Ino), st.Ctim.Nano()
}
