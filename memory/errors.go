package memory

import "errors"

// The errors of the memory store; errors.Is matches them through the
// wrapping that says what was wrong.
var (
	// ErrNotFound: no item with that id in that agent's memory.
	ErrNotFound = errors.New("memory: no such item")
	// ErrFull: the agent holds Options.MaxItems items and none of them is
	// a page that could be dropped to make room.
	ErrFull = errors.New("memory: the agent's memory is full")
	// ErrInvalid: an empty or too large text, an unknown kind, a bad agent
	// name.
	ErrInvalid = errors.New("memory: invalid request")
	// ErrBusy: another process holds the memory file.
	ErrBusy = errors.New("memory: the memory file is held by another process")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("memory: the store is closed")
	// ErrFormat: the file was written by a newer agentos.
	ErrFormat = errors.New("memory: the file's format is newer than this agentos")
)
