//go:build unix

package host

import (
	"os"
	"syscall"
)

// mayBeHardLinked reports whether fi's file has other names: only then can
// it be a hard link to a secret file.
func mayBeHardLinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 1
}
