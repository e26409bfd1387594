package journal

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentos-run/agentos/driver"
)

// decodeStored decodes a stored entry. Entries this journal wrote have the
// exact shape of Entry.appendJSON (and encodeEntry's blob and chunk references
// after it), which a direct scan reads several times faster than encoding/json's
// reflection: a replay or recovery loads every entry of its run before the
// tool starts. Anything else (an entry an older agentos wrote, an escaped
// string, a damaged value) is decoded by encoding/json, as before.
//
// IMPORTANT: the result MUST NOT alias v (bbolt's memory is valid only in
// its transaction): every byte slice in it is a copy.
func decodeStored(v []byte) (storedEntry, error) {
	if s, ok := scanStored(v); ok {
		return s, nil
	}
	var s storedEntry
	err := json.Unmarshal(v, &s)
	return s, err
}

// scanStored reads v if it has appendJSON's shape; ok false: it did not
// (nothing is partly trusted: the caller decodes v from the start).
func scanStored(v []byte) (s storedEntry, ok bool) {
	d := entryScanner{b: v}
	ok = d.head(&s) && d.timing(&s) && d.tail(&s)
	return s, ok && d.lit(`}`) && d.i == len(d.b)
}

// head reads an entry's call: seq, driver, op, request, response, error.
func (d *entryScanner) head(s *storedEntry) bool {
	if !d.lit(`{"seq":`) || !d.uint(&s.Seq) || !d.lit(`,"driver":`) || !d.str(&s.Driver) ||
		!d.lit(`,"op":`) || !d.str(&s.Op) {
		return false
	}
	if d.lit(`,"request":`) && !d.raw(&s.Request) {
		return false
	}
	if d.lit(`,"response":`) && !d.raw(&s.Response) {
		return false
	}
	if d.lit(`,"error":{"code":`) {
		s.Error = &driver.Error{}
		if !d.str(&s.Error.Code) || !d.lit(`,"message":`) || !d.str(&s.Error.Message) || !d.lit(`}`) {
			return false
		}
	}
	return true
}

// timing reads an entry's time and duration.
func (d *entryScanner) timing(s *storedEntry) bool {
	var at string
	var dur int64
	if !d.lit(`,"at":`) || !d.str(&at) || !d.lit(`,"duration_ns":`) || !d.int(&dur) {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return false
	}
	s.At, s.Duration = t, time.Duration(dur)
	return true
}

// tail reads an entry's optional members: cost, seal, blobs and chunks.
func (d *entryScanner) tail(s *storedEntry) bool {
	if d.lit(`,"cost":`) && !d.float(&s.Cost) {
		return false
	}
	for _, f := range []struct {
		name string
		into *string
	}{{`,"sealed":`, &s.Sealed}, {`,"request_blob":`, &s.RequestBlob}, {`,"response_blob":`, &s.ResponseBlob}} {
		if d.lit(f.name) && !d.str(f.into) {
			return false
		}
	}
	for _, set := range []struct {
		name string
		into **chunkSet
	}{{`,"request_chunks":`, &s.RequestChunks}, {`,"response_chunks":`, &s.ResponseChunks}} {
		var raw json.RawMessage
		if d.lit(set.name) && (!d.raw(&raw) || json.Unmarshal(raw, set.into) != nil) {
			return false
		}
	}
	return true
}

// entryScanner reads appendJSON's output left to right; every method returns
// false, consuming nothing it cannot vouch for, on anything else.
type entryScanner struct {
	b []byte
	i int
}

func (d *entryScanner) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// number returns the bytes of a JSON number's token (not validated).
func (d *entryScanner) number() []byte {
	j := d.i
	for j < len(d.b) {
		c := d.b[j]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		j++
	}
	n := d.b[d.i:j]
	d.i = j
	return n
}

func (d *entryScanner) uint(u *uint64) bool {
	n, err := strconv.ParseUint(string(d.number()), 10, 64)
	*u = n
	return err == nil
}

func (d *entryScanner) int(i *int64) bool {
	n, err := strconv.ParseInt(string(d.number()), 10, 64)
	*i = n
	return err == nil
}

func (d *entryScanner) float(f *float64) bool {
	n, err := strconv.ParseFloat(string(d.number()), 64)
	*f = n
	return err == nil
}

// str reads a JSON string without escapes whose bytes are valid UTF-8 (it
// then means exactly its bytes, as encoding/json would decode it).
func (d *entryScanner) str(s *string) bool {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			v := d.b[d.i+1 : j]
			if !utf8.Valid(v) {
				return false
			}
			*s = string(v)
			d.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// raw reads one JSON value and keeps a copy of it. The value's extent is
// found by a scan that knows strings and nesting; json.Valid then vouches
// for what it found.
func (d *entryScanner) raw(m *json.RawMessage) bool {
	j, depth := d.i, 0
	for j < len(d.b) {
		switch c := d.b[j]; c {
		case '"':
			j++
			for j < len(d.b) && d.b[j] != '"' {
				if d.b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(d.b) {
				return false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				goto end
			}
			depth--
		case ',':
			if depth == 0 {
				goto end
			}
		}
		j++
	}
end:
	v := d.b[d.i:j]
	if len(v) == 0 || depth != 0 || space(v[0]) || space(v[len(v)-1]) || !json.Valid(v) {
		return false
	}
	*m = bytes.Clone(v)
	d.i = j
	return true
}

func space(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
