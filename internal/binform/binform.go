// Package binform is the small binary form of the caches agentos keeps
// between two starts (the registry's snapshot and the search index in
// it): unsigned varints for numbers, lengths and counts; a string as its
// length, then its bytes; a list as its count, then its items.
//
// A Reader reads it from a string, and the strings it returns share that
// string. Its first error sticks: a decoder reads a whole record and
// checks Err once. It never panics and never allocates more than its
// input could hold, whatever the bytes: a damaged length or count fails.
package binform

import (
	"encoding/binary"
	"fmt"
)

// AppendString appends s: its length, then its bytes.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// AppendBytes appends p as AppendString appends a string.
func AppendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// AppendStrings appends the count of ss, then each string; nil and empty
// are alike.
func AppendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = AppendString(b, s)
	}
	return b
}

// Reader reads the form from a string, from a position on.
type Reader struct {
	s   string
	i   int
	err error
	bad error // every error wraps it
}

// NewReader reads s from byte at; its errors wrap bad.
func NewReader(s string, at int, bad error) *Reader {
	r := &Reader{s: s, i: at, bad: bad}
	if at < 0 || at > len(s) {
		r.Fail("a start past the end")
	}
	return r
}

// Err is the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Pos is where the next read starts.
func (r *Reader) Pos() int { return r.i }

// Left is how many bytes are left to read.
func (r *Reader) Left() int { return len(r.s) - r.i }

// Fail records an error at the current position, unless one is recorded.
func (r *Reader) Fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", r.bad, r.i, fmt.Sprintf(format, a...))
	}
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil || r.i >= len(r.s) {
		r.Fail("truncated")
		return 0
	}
	r.i++
	return r.s[r.i-1]
}

// Uint reads an unsigned varint no larger than limit.
func (r *Reader) Uint(limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := uvarint(r.s[r.i:])
	if n <= 0 || v > limit {
		r.Fail("a number out of range")
		return 0
	}
	r.i += n
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	u := r.Uint(1<<64 - 1)
	x := int64(u >> 1) // binary.Varint's zig-zag
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// Count reads the length of a list whose items take at least size bytes
// each: no more than the bytes left hold, so that a damaged count
// allocates nothing huge.
func (r *Reader) Count(size int) int {
	return int(r.Uint(uint64(r.Left() / max(size, 1))))
}

// Raw reads the next n bytes.
func (r *Reader) Raw(n int) string {
	if r.err != nil || n < 0 || n > r.Left() {
		r.Fail("truncated")
		return ""
	}
	r.i += n
	return r.s[r.i-n : r.i]
}

// String reads a string.
func (r *Reader) String() string { return r.Raw(r.Count(1)) }

// Strings reads a list of strings; an empty one is nil.
func (r *Reader) Strings() []string {
	n := r.Count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.String()
	}
	return out
}

// uvarint is binary.Uvarint of a string.
func uvarint(s string) (uint64, int) {
	var x uint64
	var sh uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<sh, i + 1
		}
		x |= uint64(c&0x7f) << sh
		sh += 7
	}
	return 0, 0
}
