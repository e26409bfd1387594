//go:build linux

package vfs

import (
	"path"

	"golang.org/x/sys/unix"
)

// beneath is how the fast paths resolve beneath the jail's root: no
// symbolic link at all, no escape.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// writeFast is writeResolved for a resolved path r whose directory exists
// and has no symbolic link on its way, in the fewest system calls: the
// directory opened once by openat2 beneath the root (refusing every link),
// the temporary file created in it (O_EXCL, O_NOFOLLOW), written, closed
// and renamed over r's name, all relative to that descriptor. os.Root
// walks both paths again component by component for each of MkdirAll,
// OpenFile and Rename: about 20 system calls for a file two directories
// deep, against 5 here.
//
// ok false: it could not (no openat2, no root descriptor, the directory is
// missing or has a link on its way, or a step failed); whatever it created
// is removed and writeResolved writes as before, with the errors it always
// gave. The file is never left half-written under r's name: the rename is
// the last step.
func (j *Jail) writeFast(r string, data []byte) (ok bool) {
	if noOpenat2.Load() || r == "" || r == "." || r[0] == '/' {
		return false
	}
	j.fdMu.RLock()
	defer j.fdMu.RUnlock()
	if j.rootFD < 0 {
		return false
	}
	dir, err := j.openat2(path.Dir(r), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(dir)
	base := path.Base(r)
	tmp := tempName(base)
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return false
	}
	werr := writeAll(fd, data)
	if cerr := unix.Close(fd); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dir, tmp, dir, base)
	}
	if werr != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return false
	}
	return true
}

// writeAll writes data to fd, retrying short writes and EINTR.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// openat2 opens p (relative to the root) with flags, beneath the root
// and refusing every symbolic link. The caller MUST hold j.fdMu (read) and
// have checked j.rootFD.
func (j *Jail) openat2(p string, flags uint64) (int, error) {
	return unix.Openat2(j.rootFD, p, &unix.OpenHow{Flags: flags, Resolve: beneath})
}

// parentBeneath reports whether the directory holding the clean path c
// resolves beneath the root with no symbolic link on its way (c's own
// name, missing, then resolves to itself). The caller holds j.fdMu.
func (j *Jail) parentBeneath(c string) bool {
	fd, err := j.openat2(path.Dir(c), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
