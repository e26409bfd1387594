package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Model payloads as chunks.
//
// A model request repeats the whole conversation so far, so a run that
// kept every request whole would grow with the square of its turns. The
// payloads of the drivers in Options.ChunkDrivers ("llm" by default) are
// therefore stored in pieces, each kept once by its content hash with the
// blobs: every element of a top-level array of the payload (a request's
// "messages" and "tools") and every top-level object of at least
// minObjectChunk bytes (a response's "message", which the next request
// repeats) is a chunk. The entry keeps the payload's skeleton (those
// members emptied: [] and {}) and, per payload, a chunkSet: for each
// member, its chunk, or its list of element chunks written as "the first
// Keep elements of the same member in call #Base of this run, then Add"
// (a conversation's next request names only its new messages) with the
// SHA-256 of the whole list of hashes. Reading a run puts every payload
// back, byte for byte, checking every chunk against its hash and every
// list against its own (hashing hashes, not the payloads: a
// conversation's payloads are long, and reading them back is replay's
// hot path): Entries, Replayer, Recover and Export never see a chunk. A payload that does not split
// exactly (not an object, escapes in a member name) is stored whole.

// minObjectChunk is the size from which a top-level object member is a
// chunk of its own (a smaller one costs more as a reference than inline).
const minObjectChunk = 128

// DefaultChunkDrivers are the drivers whose payloads are stored as chunks
// when Options.ChunkDrivers is nil: the model's.
var DefaultChunkDrivers = []string{"llm"}

// chunkSet says how a payload's skeleton is filled back in.
type chunkSet struct {
	Members []chunkMember `json:"members"`
}

// chunkMember is one emptied member of a payload's skeleton.
type chunkMember struct {
	Name string `json:"name"`
	// Chunk is an object member's one chunk; empty for an array member.
	Chunk string `json:"chunk,omitempty"`
	// Base, Keep: an array member starts with the first Keep elements of
	// the same member of the same payload (request or response) of call
	// #Base of this run. Keep 0: no base.
	Base uint64 `json:"base,omitempty"`
	Keep int    `json:"keep,omitempty"`
	// Add are the element chunks after those.
	Add []string `json:"add,omitempty"`
	// List is listHash of the whole list (an array member).
	List string `json:"list,omitempty"`
}

// listHash is the hex SHA-256 of an array member's element hashes, in
// order.
func listHash(hashes []string) string {
	buf := make([]byte, 0, len(hashes)*sha256.Size*2)
	for _, x := range hashes {
		buf = append(buf, x...)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// refs returns the chunks set refers to itself (not through a base).
func (s *chunkSet) refs() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, m := range s.Members {
		if m.Chunk != "" {
			out = append(out, m.Chunk)
		}
		out = append(out, m.Add...)
	}
	return out
}

// chunker encodes one run's entries: it remembers each chunked array
// member's last element list, so that the next payload names only what it
// adds. IMPORTANT: an entry MUST be queued for writing before a later
// entry refers to it (Run.Middleware encodes and queues under mu).
type chunker struct {
	mu   sync.Mutex
	last map[string]chunkList // side + "." + member name -> its last list
}

// chunkList is an array member's element chunks in call #seq.
type chunkList struct {
	seq    uint64
	hashes []string
}

// chunks reports whether driver's payloads are stored as chunks.
func (j *Journal) chunks(driver string) bool {
	if j.opts.NoChunks {
		return false
	}
	drivers := j.opts.ChunkDrivers
	if drivers == nil {
		drivers = DefaultChunkDrivers
	}
	return slices.Contains(drivers, driver)
}

// member is a top-level member of a payload being split: its value's
// extent, and an array's elements' extents.
type member struct {
	name       string
	start, end int      // the value ([...] or {...})
	elems      [][2]int // an array's elements
	object     bool     // an object chunked whole
}

// chunkPayload splits p (a payload of call #seq, side "request" or
// "response") into its skeleton, its chunkSet and the chunks it adds. ok
// false: p is stored whole.
func (ck *chunker) chunkPayload(seq uint64, side string, p []byte) (skeleton []byte, set *chunkSet, blobs []blob, ok bool) {
	members, ok := splitObject(p)
	if !ok || len(members) == 0 {
		return nil, nil, nil, false
	}
	set = &chunkSet{}
	skeleton = make([]byte, 0, 256)
	at := 0
	for _, m := range members {
		cm := chunkMember{Name: m.name}
		if m.object {
			b := newBlob(p[m.start:m.end])
			blobs = append(blobs, b)
			cm.Chunk = b.hash
			skeleton = append(append(skeleton, p[at:m.start]...), "{}"...)
		} else {
			hashes := make([]string, len(m.elems))
			add := make([]blob, len(m.elems))
			for i, e := range m.elems {
				add[i] = newBlob(p[e[0]:e[1]])
				hashes[i] = add[i].hash
			}
			key := side + "." + m.name
			if prev, found := ck.last[key]; found {
				n := 0
				for n < len(prev.hashes) && n < len(hashes) && prev.hashes[n] == hashes[n] {
					n++
				}
				if n > 0 {
					cm.Base, cm.Keep = prev.seq, n
				}
			}
			cm.Add, cm.List = hashes[cm.Keep:], listHash(hashes)
			blobs = append(blobs, add[cm.Keep:]...)
			if ck.last == nil {
				ck.last = map[string]chunkList{}
			}
			ck.last[key] = chunkList{seq: seq, hashes: hashes}
			skeleton = append(append(skeleton, p[at:m.start]...), "[]"...)
		}
		at = m.end
		set.Members = append(set.Members, cm)
	}
	skeleton = append(skeleton, p[at:]...)
	return skeleton, set, blobs, true
}

// splitObject finds the members of the JSON object p worth chunking: its
// non-empty arrays and its objects of minObjectChunk bytes or more. ok
// false: p is not an object this scanner reads exactly (whitespace,
// escaped or repeated member names, invalid JSON); it is then stored
// whole.
func splitObject(p []byte) (out []member, ok bool) {
	if len(p) < 2 || p[0] != '{' || !json.Valid(p) {
		return nil, false
	}
	i := 1
	if p[i] == '}' {
		return nil, i+1 == len(p)
	}
	seen := map[string]bool{}
	for {
		if i >= len(p) || p[i] != '"' {
			return nil, false
		}
		k := bytes.IndexByte(p[i+1:], '"')
		if k < 0 || bytes.IndexByte(p[i+1:i+1+k], '\\') >= 0 {
			return nil, false
		}
		name := string(p[i+1 : i+1+k])
		if seen[name] { // a member twice: not what a chunk list can name
			return nil, false
		}
		seen[name] = true
		i += k + 2
		if i >= len(p) || p[i] != ':' {
			return nil, false
		}
		i++
		end, ok := valueEnd(p, i)
		if !ok {
			return nil, false
		}
		switch {
		case p[i] == '[' && end-i > 2:
			m := member{name: name, start: i, end: end}
			for j := i + 1; ; {
				e, ok := valueEnd(p, j)
				if !ok {
					return nil, false
				}
				m.elems = append(m.elems, [2]int{j, e})
				if e >= end-1 {
					break
				}
				if p[e] != ',' {
					return nil, false
				}
				j = e + 1
			}
			if m.elems[len(m.elems)-1][1] != end-1 {
				return nil, false
			}
			out = append(out, m)
		case p[i] == '{' && end-i >= minObjectChunk:
			out = append(out, member{name: name, start: i, end: end, object: true})
		}
		i = end
		if i >= len(p) {
			return nil, false
		}
		if p[i] == '}' {
			return out, i+1 == len(p)
		}
		if p[i] != ',' {
			return nil, false
		}
		i++
	}
}

// valueEnd returns where the JSON value starting at p[i] ends (p is valid
// JSON without whitespace between tokens; ok false otherwise).
func valueEnd(p []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(p); j++ {
		switch p[j] {
		case '"':
			j++
			for j < len(p) && p[j] != '"' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(p) {
				return 0, false
			}
			if depth == 0 {
				return j + 1, true
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return j, j > i
			}
			if depth == 0 {
				return j + 1, true
			}
		case ',':
			if depth == 0 {
				return j, j > i
			}
		case ' ', '\t', '\n', '\r':
			return 0, false
		}
	}
	if depth == 0 && len(p) > i {
		return len(p), true
	}
	return 0, false
}

// runDecoder puts a run's chunked payloads back. Its memos make each
// chunk read and checked once, and each list resolved once, per read of
// the run.
type runDecoder struct {
	run     string
	getBlob func(hash string) []byte
	byseq   map[uint64]*storedEntry
	chunks  map[string][]byte   // hash -> checked bytes
	lists   map[string][]string // seq/side/member -> element hashes
	busy    map[string]bool     // lists being resolved (a damaged journal's cycle)
}

// chunk returns the checked bytes of chunk hash, referred to by call seq.
func (d *runDecoder) chunk(seq uint64, side, hash string) ([]byte, error) {
	if v, ok := d.chunks[hash]; ok {
		return v, nil
	}
	data := d.getBlob(hash)
	if data == nil {
		return nil, fmt.Errorf("journal: run %s, call #%d: its %s refers to chunk %s, which the journal lacks (the journal is damaged); restore the journal from a backup, or let retention ('agentos runs prune') delete the run", d.run, seq, side, hash)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hash {
		return nil, fmt.Errorf("journal: run %s, call #%d: chunk %s of its %s is damaged (its bytes no longer hash to its name); restore the journal from a backup, or let retention ('agentos runs prune') delete the run", d.run, seq, hash, side)
	}
	d.chunks[hash] = data
	return data, nil
}

// list resolves the element hashes of member m of call seq's side.
func (d *runDecoder) list(seq uint64, side string, m chunkMember) ([]string, error) {
	key := fmt.Sprintf("%d/%s/%s", seq, side, m.Name)
	if l, ok := d.lists[key]; ok {
		return l, nil
	}
	if d.busy[key] {
		return nil, fmt.Errorf("journal: run %s, call #%d: the chunks of its %s refer to themselves (the journal is damaged)", d.run, seq, side)
	}
	d.busy[key] = true
	var out []string
	if m.Keep > 0 {
		base, ok := d.byseq[m.Base]
		var bm *chunkMember
		if ok {
			bm = base.member(side, m.Name)
		}
		if bm == nil || bm.Chunk != "" {
			return nil, fmt.Errorf("journal: run %s, call #%d: its %s continues the %q of call #%d, which the run lacks (the journal is damaged, or a write of the run was lost)", d.run, seq, side, m.Name, m.Base)
		}
		prev, err := d.list(m.Base, side, *bm)
		if err != nil {
			return nil, err
		}
		if m.Keep > len(prev) {
			return nil, fmt.Errorf("journal: run %s, call #%d: its %s keeps %d elements of call #%d's %q, which has %d (the journal is damaged)", d.run, seq, side, m.Keep, m.Base, m.Name, len(prev))
		}
		out = append(out, prev[:m.Keep]...)
	}
	out = append(out, m.Add...)
	if listHash(out) != m.List {
		return nil, fmt.Errorf("journal: run %s, call #%d: the %q of its %s, put back from its chunks, does not match the list recorded with it (the journal is damaged); restore the journal from a backup, or let retention ('agentos runs prune') delete the run", d.run, seq, m.Name, side)
	}
	d.lists[key] = out
	return out, nil
}

// member returns the chunked member name of side, nil if none.
func (s *storedEntry) member(side, name string) *chunkMember {
	set := s.RequestChunks
	if side == "response" {
		set = s.ResponseChunks
	}
	if set == nil {
		return nil
	}
	for i := range set.Members {
		if set.Members[i].Name == name {
			return &set.Members[i]
		}
	}
	return nil
}

// fill puts a chunked payload back from its skeleton: its pieces first,
// then one copy into a buffer of the exact size (a conversation's requests
// are long; growing the buffer as they are put back cost more than the
// rest of reading them).
func (d *runDecoder) fill(s *storedEntry, side string, skeleton []byte, set *chunkSet) ([]byte, error) {
	members, ok := skeletonMembers(skeleton, set)
	if !ok {
		return nil, fmt.Errorf("journal: run %s, call #%d: the skeleton of its %s does not match its chunks (the journal is damaged)", d.run, s.Seq, side)
	}
	pieces := make([][]byte, 0, 16)
	at := 0
	for i, m := range set.Members {
		pos := members[i]
		pieces = append(pieces, skeleton[at:pos])
		at = pos + 2 // [] or {}
		if m.Chunk != "" {
			data, err := d.chunk(s.Seq, side, m.Chunk)
			if err != nil {
				return nil, err
			}
			pieces = append(pieces, data)
			continue
		}
		hashes, err := d.list(s.Seq, side, m)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, open)
		for k, h := range hashes {
			data, err := d.chunk(s.Seq, side, h)
			if err != nil {
				return nil, err
			}
			if k > 0 {
				pieces = append(pieces, comma)
			}
			pieces = append(pieces, data)
		}
		pieces = append(pieces, closing)
	}
	pieces = append(pieces, skeleton[at:])
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range pieces {
		out = append(out, p...)
	}
	return out, nil
}

// The bytes fill puts between an array's chunks.
var open, comma, closing = []byte("["), []byte(","), []byte("]")

// skeletonMembers returns where each of set's members' emptied value ([]
// or {}) starts in skeleton, in order; ok false when they are not there.
func skeletonMembers(skeleton []byte, set *chunkSet) ([]int, bool) {
	out := make([]int, 0, len(set.Members))
	i := 1
	for _, m := range set.Members {
		key := append(append([]byte{'"'}, m.Name...), '"', ':')
		for {
			if i >= len(skeleton) || skeleton[i] != '"' {
				return nil, false
			}
			if bytes.HasPrefix(skeleton[i:], key) {
				i += len(key)
				break
			}
			// another member: skip its name and value
			k := bytes.IndexByte(skeleton[i+1:], '"')
			if k < 0 {
				return nil, false
			}
			i += k + 3 // name, quotes, colon
			end, ok := valueEnd(skeleton, i)
			if !ok || end >= len(skeleton) {
				return nil, false
			}
			i = end + 1
		}
		want := "[]"
		if m.Chunk != "" {
			want = "{}"
		}
		if !bytes.HasPrefix(skeleton[i:], []byte(want)) {
			return nil, false
		}
		out = append(out, i)
		i += 2
		if i < len(skeleton) && skeleton[i] == ',' {
			i++
		}
	}
	return out, true
}
