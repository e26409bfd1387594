//go:build !unix

package repo

import (
	"context"
	"sync"
	"time"
)

var dirLocks sync.Map // dir -> *sync.Mutex

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
