package vfs

import (
	"io/fs"
	"syscall"
)

// InodeCtime returns fi's inode and change time (ns), or zeros when fi did
// not come from the file system: a file rewritten with its size and
// modification time restored still changes them, so a cache keyed by a
// file's stat can tell it apart.
func InodeCtime(fi fs.FileInfo) (ino, ctime int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return int64(st.Ino), st.Ctim.Nano()
}
