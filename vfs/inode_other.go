//go:build !linux

package vfs

import "io/fs"

// InodeCtime returns zeros: this platform's FileInfo is not read for them
// (a stat cache then relies on size and modification time).
func InodeCtime(fs.FileInfo) (ino, ctime int64) { return 0, 0 }
