//go:build linux

package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 is found missing (a kernel before 5.6, or a
// filter refusing it): the fast read is then not tried again.
var noOpenat2 atomic.Bool

// fastRead is readResolved for a regular file on Linux, in the fewest
// system calls: openat2 beneath the jail's root refusing every symbolic
// link (the path is resolved already: a link now is a race, for the slow
// path), fstat, reads, close; none of the poller registration an os.File
// costs (fcntl, epoll_ctl). ok false: nothing was done and check was not
// called; readResolved does the read as before.
//
// IMPORTANT: once check is called, the outcome is final (ok true): check
// counts a use of the caller's token and MUST run once. Every refusal and
// error after it is the one readResolved returns, word for word.
func (j *Jail) fastRead(p, r string, max int64, check func() error) (b []byte, ok bool, err error) {
	fd, opened := j.openBeneath(r)
	if !opened {
		return nil, false, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, nil // not a regular file (a directory, a FIFO): the slow path
	}
	size := st.Size
	if max > 0 && size > max {
		return nil, true, &TooLargeError{Path: p, Size: size, Max: max}
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, true, err
		}
	}
	if st.Nlink > 1 {
		return nil, true, securityErr("read", p, fmt.Sprintf("the file has %d hard links; agentos never reads a hard-linked file, since it may be another file's twin (its journal, a key): copy it instead", st.Nlink))
	}
	if b, err = readFD(fd, size); err != nil {
		return nil, true, j.wrap("read", p, &fs.PathError{Op: "read", Path: j.fileName(r), Err: err})
	}
	if max > 0 && int64(len(b)) > max { // it grew since
		return nil, true, &TooLargeError{Path: p, Size: int64(len(b)), Max: max}
	}
	return b, true, nil
}

// readBeneath is resolve and readResolved in one openat2 for the clean
// path c when no symbolic link is on its way (the common case): fastRead's
// open beneath the root, refusing every link, proves that c resolves to
// itself (as resolveFast's O_PATH open does) and is the read's open as
// well. check, when not nil, is called on c (where c resolves) before
// anything is read, as fastRead calls its own. ok false: nothing was done
// and check was not called (c has a link or a hidden name on its way, is
// missing or no regular file, or openat2 is not there); the caller
// resolves and reads as before.
func (j *Jail) readBeneath(p, c string, max int64, check func(resolved string) error) ([]byte, bool, error) {
	if hasHidden(c) {
		return nil, false, nil
	}
	var then func() error
	if check != nil {
		then = func() error { return check(c) }
	}
	return j.fastRead(p, c, max, then)
}

// openBeneath opens the resolved path r read-only with openat2 beneath the
// jail's root, refusing every symbolic link. ok false: it could not (no
// openat2, no root descriptor, r not relative, or the open failed), and
// the slow path reads.
func (j *Jail) openBeneath(r string) (fd int, ok bool) {
	if noOpenat2.Load() || r == "" || r == "." || strings.HasPrefix(r, "/") {
		return -1, false
	}
	j.fdMu.RLock()
	defer j.fdMu.RUnlock()
	if j.rootFD < 0 {
		return -1, false
	}
	fd, err := j.openat2(r, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			noOpenat2.Store(true)
		}
		return -1, false
	}
	return fd, true
}

// resolveFast is resolve for a path with no symbolic link on its way,
// the common case: one openat2 beneath the root that refuses every link
// (the last component's too) proves that c resolves to itself, instead of
// an lstat of every prefix; for a c whose last name is missing (a file
// about to be written), a second one proves it of its directory. ok false:
// c's directory is missing, c has a link or a hidden component on its
// way, or openat2 is not there; resolve then walks c and gives the answer
// or the error it always gave.
func (j *Jail) resolveFast(c string) (r string, ok bool) {
	if noOpenat2.Load() || c == "" || c == "." || strings.HasPrefix(c, "/") || hasHidden(c) {
		return "", false
	}
	j.fdMu.RLock()
	defer j.fdMu.RUnlock()
	if j.rootFD < 0 {
		return "", false
	}
	// IMPORTANT: no O_NOFOLLOW: with O_PATH it would open a final link
	// itself instead of refusing it.
	fd, err := j.openat2(c, unix.O_PATH|unix.O_CLOEXEC)
	if errors.Is(err, unix.ENOENT) {
		// A file about to be created: if its directory resolves to
		// itself, so does c (its missing last name is no link), as the
		// walk would find.
		return c, j.parentBeneath(c)
	}
	if err != nil {
		return "", false
	}
	unix.Close(fd)
	return c, true
}

// hasHidden reports whether a component of the clean path c is hidden.
func hasHidden(c string) bool {
	for c != "" {
		name, rest, _ := strings.Cut(c, "/")
		if hidden[name] || name == ".." {
			return true
		}
		c = rest
	}
	return false
}

// readFD reads fd to its end, size being its size as fstat saw it. The
// buffer has room for the file and one byte more, so that the read finding
// the end is the second one (as io.ReadAll, for a file that did not grow);
// at most 1 MiB up front, so that a sparse or lying size cannot make one
// huge allocation: the buffer grows as the bytes really come, doubling,
// or to the size and one byte when that is less (append's growth of a
// large slice, a quarter at a time, copied an 8 MiB file 37 MB over).
func readFD(fd int, size int64) ([]byte, error) {
	b := make([]byte, 0, min(size+1, 1<<20))
	for {
		if len(b) == cap(b) {
			n := 2 * cap(b)
			if want := size + 1; want > int64(cap(b)) && want < int64(n) {
				n = int(want)
			}
			b = append(make([]byte, 0, n), b...)
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// fileName is the name os.Root gives the file at r (os.File.Name).
func (j *Jail) fileName(r string) string {
	if strings.HasSuffix(j.dir, "/") {
		return j.dir + r
	}
	return j.dir + "/" + r
}

// openRootFD opens the directory the root r holds, for fastRead: through
// r itself, so that it is the same directory whatever happened to its
// path since. -1 if it cannot.
func openRootFD(r *os.Root) int {
	f, err := r.Open(".")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	_ = sc.Control(func(d uintptr) {
		nfd, err := unix.FcntlInt(d, unix.F_DUPFD_CLOEXEC, 0)
		if err == nil {
			fd = nfd
		}
	})
	return fd
}

func closeRootFD(fd int) {
	if fd >= 0 {
		_ = syscall.Close(fd)
	}
}
