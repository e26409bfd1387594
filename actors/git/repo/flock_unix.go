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
	return flockCtx(ctx, dir, syscall.LOCK_EX)
}

// readLockDir takes a shared flock on dir, waiting while an exclusive one
// is held, until ctx ends. The readers of a repository's objects that do
// not hold its writer's lock (a fetch from a local upstream, Verify) hold
// it on the objects directory, so that no merge of packs (tryLockDir)
// deletes a pack they listed.
func readLockDir(ctx context.Context, dir string) (unlock func(), err error) {
	return flockCtx(ctx, dir, syscall.LOCK_SH)
}

// tryLockDir takes an exclusive flock on dir without waiting: ok is false
// when another holder (a reader, see readLockDir) has it.
func tryLockDir(dir string) (unlock func(), ok bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, err
	}
	return unlockFile(f), true, nil
}

// flockCtx takes a flock of kind how (LOCK_EX or LOCK_SH) on dir, polling
// until it is free or ctx ends.
func flockCtx(ctx context.Context, dir string, how int) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
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
	return unlockFile(f), nil
}

// unlockFile releases the flock held through f and closes it.
func unlockFile(f *os.File) func() {
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}
