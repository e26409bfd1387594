package transpile

import (
	"encoding/base64"
	"strings"
)

// lineOneMap returns the base64 source map that maps the tokens of the
// body's first line, which follows shift bytes of wrapper on the same
// line, back to their columns; "" when that line has no token but
// comments (a tool's doc comment: goja then parses no map at all).
//
// Why only the first line: goja (with go-sourcemap) reports a position
// without a mapping at its own line and column, which on every later line
// are the source's own; a position on a mapped line is that of the nearest
// token at or before it, so each token of line one gets a segment.
func (s *stripper) lineOneMap(path string, shift int) string {
	end := uint32(len(s.out))
	if k := strings.IndexByte(string(s.out), '\n'); k >= 0 {
		end = uint32(k)
	}
	var seg []byte
	// IMPORTANT: goja reports a mapped column as the map's (0-based)
	// number and an unmapped one 1-based; the map says column+1 so that the
	// first line reads 1-based like every other.
	prevGen, prevSrc := 0, 0
	for i, n := range s.t.Nodes {
		if n.Start >= end {
			break // pre-order: every later node starts later
		}
		if n.First >= 0 || n.End == n.Start || s.out[n.Start] == ' ' || s.t.Type(int32(i)) == "comment" {
			continue // not a token, an erased one, or a comment (no error is ever there)
		}
		gen, src := shift+int(n.Start), int(n.Start)+1
		if len(seg) > 0 {
			seg = append(seg, ',')
		}
		seg = vlq(seg, gen-prevGen)
		seg = append(seg, 'A', 'A') // source 0, line 0
		seg = vlq(seg, src-prevSrc)
		prevGen, prevSrc = gen, src
	}
	if len(seg) == 0 {
		return ""
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	m := `{"version":3,"sources":["` + jsonEscape(base) + `"],"names":[],"mappings":"` + string(seg) + `"}`
	return base64.StdEncoding.EncodeToString([]byte(m))
}

// vlq appends v as a source map base64 VLQ.
func vlq(b []byte, v int) []byte {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	u := v << 1
	if v < 0 {
		u = (-v << 1) | 1
	}
	for {
		d := u & 31
		u >>= 5
		if u > 0 {
			d |= 32
		}
		b = append(b, digits[d])
		if u == 0 {
			return b
		}
	}
}

// jsonEscape escapes a file name for a JSON string.
func jsonEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
