//go:build !unix

package registry

import "io/fs"

// inodeCtime: not given by this platform's FileInfo.
func inodeCtime(fs.FileInfo) (ino, ctime int64) { return 0, 0 }
