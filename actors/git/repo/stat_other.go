//go:build !linux

package repo

import (
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat copies the stat data git compares into an index entry.
func fillStat(e *index.Entry, fi fs.FileInfo) {
	e.Size = uint32(fi.Size())
	e.ModifiedAt = fi.ModTime()
}
