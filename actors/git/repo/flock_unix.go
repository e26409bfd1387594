//go:build unix

package repo

import (
	"context"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// lockDir takes an exclusive flock on a directory, blocking until it is
// free. The kernel releases it when the process dies, so a killed writer
// never leaves a lock behind (and no lock file is created).
func lockDir(dir string) (unlock func(), err error) {
	return lockDirCtx(context.Background(), dir)
}

// lockDirCtx is lockDir giving up when ctx ends.
func lockDirCtx(ctx context.Context, dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, err
		}
		if err := sleep(ctx, time.Duration(200+rand.IntN(800))*time.Microsecond); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
