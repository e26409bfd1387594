// Package clip shortens values that are echoed back to a user: a path, a
// field name or a resource quoted in an error message or a kernel event.
// Values come from callers (a tool's arguments, an LLM's tool call) and can
// be megabytes long; an error or an event MUST quote at most a prefix of
// them, or every refusal would pin and echo the whole value.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Max is how many bytes of a value Text keeps: enough to recognise a path
// or a statement, small enough that a ring of a thousand events stays in
// the kilobytes per event.
const Max = 256

// Text returns s when it is at most Max bytes long, else its first Max
// bytes (cut on a UTF-8 boundary) followed by "… (N bytes)", N being the
// length of the whole value.
func Text(s string) string { return N(s, Max) }

// N is Text with a chosen limit (at least 16 bytes).
func N(s string, limit int) string {
	limit = max(limit, 16)
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// Error wraps err so that its message is at most limit bytes (see N) while
// errors.Is and errors.As still see err. A short message is returned as is.
func Error(err error, limit int) error {
	if err == nil || len(err.Error()) <= max(limit, 16) {
		return err
	}
	return &clipped{msg: N(err.Error(), limit), err: err}
}

type clipped struct {
	msg string
	err error
}

func (c *clipped) Error() string { return c.msg }
func (c *clipped) Unwrap() error { return c.err }
