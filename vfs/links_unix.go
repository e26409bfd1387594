//go:build unix

package vfs

import (
	"io/fs"
	"syscall"
)

// links returns the number of hard links of the file fi describes.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
