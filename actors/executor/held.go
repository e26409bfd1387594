package executor

import (
	"bufio"
	"errors"
	"sync"
)

// maxHeldBytes bounds the bytes of one worker's frames the parent holds at
// once: the frames of the driver calls it is still answering, and the frame
// it is reading. IMPORTANT: a frame is read only once it fits (or once the
// parent holds none, so that one frame up to maxFrame always goes through):
// a tool that fires many large calls without awaiting them (write_file of
// megabytes, sandbox.MaxInFlight times) waits for its earlier calls to be
// answered instead of making the parent buffer them all, whatever the
// worker's own memory limit.
const maxHeldBytes = 16 << 20

// errWorkerGone: the worker exited while the parent waited for room to read
// its next frame.
var errWorkerGone = errors.New("the sandbox worker exited")

// held counts the bytes of a worker's frames the parent holds.
type held struct {
	mu    sync.Mutex
	bytes int
	max   int
	freed chan struct{} // closed at the next release; nil when no one waits
}

// acquire waits until n more bytes fit under the bound (or nothing is
// held) and counts them; false if gone closed first.
func (h *held) acquire(n int, gone <-chan struct{}) bool {
	for {
		h.mu.Lock()
		if h.bytes == 0 || h.bytes+n <= h.max {
			h.bytes += n
			h.mu.Unlock()
			return true
		}
		if h.freed == nil {
			h.freed = make(chan struct{})
		}
		freed := h.freed
		h.mu.Unlock()
		select {
		case <-freed:
		case <-gone:
			return false
		}
	}
}

// release uncounts n bytes and wakes a waiting acquire.
func (h *held) release(n int) {
	h.mu.Lock()
	h.bytes -= n
	if h.freed != nil {
		close(h.freed)
		h.freed = nil
	}
	h.mu.Unlock()
}

// readHeld reads w's next frame once its bytes fit under h; n is its size,
// counted in h until the caller releases it. A length prefix over maxFrame
// is refused before anything of the frame is allocated.
func readHeld(out *bufio.Reader, h *held, gone <-chan struct{}) (f *frame, n int, err error) {
	if n, err = readFrameLen(out); err != nil {
		return nil, 0, err
	}
	if !h.acquire(n, gone) {
		return nil, 0, errWorkerGone
	}
	if f, err = readFrameBody(out, n); err != nil {
		h.release(n)
		return nil, 0, err
	}
	return f, n, nil
}
