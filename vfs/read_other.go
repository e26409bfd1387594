//go:build !linux

package vfs

import "os"

// fastRead: only Linux has one; readResolved reads as it always did.
func (j *Jail) fastRead(p, r string, max int64, check func() error) ([]byte, bool, error) {
	return nil, false, nil
}

// readBeneath: only Linux has one; the read resolves, then reads.
func (j *Jail) readBeneath(p, c string, max int64, check func(string) error) ([]byte, bool, error) {
	return nil, false, nil
}

// resolveFast: only Linux has one; resolve walks every path.
func (j *Jail) resolveFast(c string) (string, bool) { return "", false }

// writeFast: only Linux has one; writeResolved writes through os.Root.
func (j *Jail) writeFast(r string, data []byte) bool { return false }

func openRootFD(r *os.Root) int { return -1 }

func closeRootFD(fd int) {}
