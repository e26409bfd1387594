//go:build !unix

package repo

import (
	"context"
	"sync"
	"time"
)

var (
	dirLocks  sync.Map // dir -> *sync.Mutex
	readLocks sync.Map // dir -> *sync.RWMutex
)

// lockDir serializes on a directory within this process only: on systems
// without flock, concurrent writer processes of one local upstream are not
// supported.
func lockDir(dir string) (unlock func(), err error) {
	return lockDirCtx(context.Background(), dir)
}

func lockDirCtx(ctx context.Context, dir string) (unlock func(), err error) {
	m, _ := dirLocks.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	for !mu.TryLock() {
		if err := sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
	return mu.Unlock, nil
}

// readLockDir takes dir's readers' lock within this process only (see
// the unix version).
func readLockDir(ctx context.Context, dir string) (unlock func(), err error) {
	mu := readMutex(dir)
	for !mu.TryRLock() {
		if err := sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
	return mu.RUnlock, nil
}

// tryLockDir takes dir's readers' lock exclusively, within this process
// only, without waiting.
func tryLockDir(dir string) (unlock func(), ok bool, err error) {
	mu := readMutex(dir)
	if !mu.TryLock() {
		return nil, false, nil
	}
	return mu.Unlock, true, nil
}

// readMutex is dir's readers' lock in this process.
func readMutex(dir string) *sync.RWMutex {
	m, _ := readLocks.LoadOrStore(dir, &sync.RWMutex{})
	return m.(*sync.RWMutex)
}
