package journal

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendJSON appends the entry's JSON encoding to b: the same document
// json.Marshal would produce (json.Unmarshal reads it back into an Entry),
// written by hand because recording is the journal's hot path and
// reflection plus re-validating the already-canonical request and response
// cost more than the rest of recording together.
func (e *Entry) appendJSON(b []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"driver":`...)
	b = appendString(b, e.Driver)
	b = append(b, `,"op":`...)
	b = appendString(b, e.Op)
	if len(e.Request) > 0 {
		b = append(b, `,"request":`...)
		b = append(b, e.Request...)
	}
	if len(e.Response) > 0 {
		b = append(b, `,"response":`...)
		b = append(b, e.Response...)
	}
	if e.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = appendString(b, e.Error.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, e.Error.Message)
		b = append(b, '}')
	}
	b = append(b, `,"at":"`...)
	b = e.At.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","duration_ns":`...)
	b = strconv.AppendInt(b, int64(e.Duration), 10)
	if e.Cost != 0 {
		b = append(b, `,"cost":`...)
		b = strconv.AppendFloat(b, e.Cost, 'g', -1, 64)
	}
	if e.Sealed != "" {
		b = append(b, `,"sealed":`...)
		b = appendString(b, e.Sealed)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string (escaping as encoding/json does,
// without HTML escaping).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`...)
			b = append(b, "0123456789abcdef"[r&0xf])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
