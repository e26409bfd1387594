package pii

import "errors"

// Errors of the tokenizer. Test with errors.Is.
var (
	// ErrConfig: the Options are wrong (an unknown pattern, a custom
	// regexp that does not compile or matches the empty string, a bad
	// restore_to entry, a key too short). The message says which and how to
	// fix it.
	ErrConfig = errors.New("pii: invalid configuration")
	// ErrUnknownToken: a value sent to a driver allowed to see real values
	// holds a token the token map does not have (it was deleted, or the
	// token was made with another key, or written by hand), or whose
	// recorded value does not hash to it. The call is refused so that a
	// placeholder is never sent as if it were the data.
	ErrUnknownToken = errors.New("pii: unknown token")
	// ErrCollision: two different values hash to the same token (48 bits
	// of HMAC-SHA256: about one chance in 2^24 among 16 million values).
	// The call that met it fails; nothing is mixed up.
	ErrCollision = errors.New("pii: token collision")
	// ErrMapBusy: another process holds the token map file open.
	ErrMapBusy = errors.New("pii: the token map is open in another agentos process")
	// ErrClosed: the token map was closed.
	ErrClosed = errors.New("pii: the token map is closed")
)
