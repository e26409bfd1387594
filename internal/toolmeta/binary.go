package toolmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentos-run/agentos/internal/binform"
)

// The binary form of an Inverted (AppendBinary, DecodeInverted): what a
// registry keeps between two starts, so that a later start does not index
// every tool again (issue 28 goal 4). Integers are uvarints, a string is
// its length then its bytes:
//
//	"agentos-inverted 1\n" indexer flags(1: no path field)
//	terms  string...                      (sorted)
//	docs   { path lens[4] usage terms{term index...} }...
//	postings, per term in order: { doc delta, tf[4] }...
//
// each list preceded by its length. Removed documents are left out and the
// others renumbered in their order, so postings stay sorted by doc.

const invertedMagic = "agentos-inverted 1\n"

// indexVersion MUST be raised by any change to what Put makes of a tool
// (fieldTexts, the fields, their lengths) that the probe below cannot see.
const indexVersion = "1"

// indexer names the tokenizer and Put that built an index: their version
// and the terms of a probe text through today's tokenizer, stemmer and
// stop words. An index built by another is refused (ErrBadInverted): its
// terms are not the ones a search of today's would look for.
var indexer = func() string {
	terms := tokenize("Parsing HTTPResponses, the URLs' getURLs2 of compound_interest and résumés for 3D fooBar tools", nil)
	return indexVersion + " " + strings.Join(terms, " ")
}()

// ErrBadInverted is what DecodeInverted returns for bytes that are not an
// index AppendBinary wrote.
var ErrBadInverted = errors.New("toolmeta: not a binary search index")

// AppendBinary appends the index's binary form to b. Equal indexes (the
// same tools, usage and history of removals) give equal bytes.
func (x *Inverted) AppendBinary(b []byte) []byte {
	b = append(b, invertedMagic...)
	b = binform.AppendString(b, indexer)
	flags := byte(0)
	if x.noPath {
		flags = 1
	}
	b = append(b, flags)
	terms := make([]string, 0, len(x.post))
	for w := range x.post {
		terms = append(terms, w)
	}
	slices.Sort(terms)
	at := make(map[string]uint64, len(terms))
	b = binary.AppendUvarint(b, uint64(len(terms)))
	for i, w := range terms {
		at[w] = uint64(i)
		b = binform.AppendString(b, w)
	}
	renum := make([]int32, len(x.docs)) // old id -> new id
	b = binary.AppendUvarint(b, uint64(x.n))
	next := int32(0)
	for id, d := range x.docs {
		if !d.live {
			continue
		}
		renum[id] = next
		next++
		b = binform.AppendString(b, d.path)
		for _, l := range d.lens {
			b = binary.AppendUvarint(b, uint64(l))
		}
		b = binary.AppendUvarint(b, uint64(max(d.usage, 0)))
		b = binary.AppendUvarint(b, uint64(len(d.terms)))
		for _, w := range d.terms {
			b = binary.AppendUvarint(b, at[w])
		}
	}
	for _, w := range terms {
		ps := x.post[w]
		b = binary.AppendUvarint(b, uint64(len(ps)))
		prev := int32(-1)
		for _, p := range ps {
			id := renum[p.doc]
			b = binary.AppendUvarint(b, uint64(id-prev))
			prev = id
			for _, tf := range p.tf {
				b = binary.AppendUvarint(b, uint64(tf))
			}
		}
	}
	return b
}

// DecodeInverted returns the index whose binary form is s (AppendBinary).
// It fails with ErrBadInverted, and never panics, on anything else. The
// index's strings are substrings of s.
func DecodeInverted(s string) (*Inverted, error) {
	if len(s) < len(invertedMagic)+1 || s[:len(invertedMagic)] != invertedMagic {
		return nil, fmt.Errorf("%w: no header", ErrBadInverted)
	}
	d := &decoder{Reader: binform.NewReader(s, len(invertedMagic), ErrBadInverted)}
	if by := d.String(); d.Err() == nil && by != indexer {
		return nil, fmt.Errorf("%w: built by another indexer (%q, today's %q)", ErrBadInverted, by, indexer)
	}
	x := &Inverted{noPath: d.Byte() == 1}
	terms := d.Strings()
	docs := d.docs(terms)
	x.docs = docs
	x.n = len(docs)
	x.byPath = make(map[string]int32, len(docs))
	for id, dc := range docs {
		x.byPath[dc.path] = int32(id)
		for f := range dc.lens {
			x.sumLen[f] += int(dc.lens[f])
		}
	}
	x.post = d.postings(terms, docs)
	if d.Err() == nil && d.Left() != 0 {
		d.Fail("%d bytes after the postings", d.Left())
	}
	if d.Err() == nil && len(x.byPath) != len(docs) {
		d.Fail("a path indexed twice")
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	return x, nil
}

// decoder reads the binary form (its strings are substrings of the
// input); its first error sticks.
type decoder struct {
	*binform.Reader
	// termIdx holds each doc's terms as indexes, sorted, one doc after
	// the other, doc i's ending at termEnds[i] (docs, for postings).
	termIdx  []int32
	termEnds []int
}

// docs reads the documents, their terms indexes into terms.
func (d *decoder) docs(terms []string) []doc {
	out := make([]doc, d.Count(7)) // path, lens, usage, terms: 7 bytes at least
	ends := make([]int, len(out))
	all := make([]string, 0, min(24*len(out), d.Left()))
	d.termIdx = make([]int32, 0, cap(all)) // one array for every doc's terms (a guess of their number)
	for i := range out {
		out[i] = doc{path: d.String(), live: true}
		for f := range out[i].lens {
			out[i].lens[f] = uint32(d.Uint(math.MaxUint32))
		}
		out[i].usage = int(d.Uint(math.MaxInt64))
		start := len(all)
		for range d.Count(1) {
			t := d.Uint(uint64(len(terms)))
			if d.Err() != nil || int(t) >= len(terms) {
				d.Fail("a term out of range")
				return nil
			}
			all = append(all, terms[t])
			d.termIdx = append(d.termIdx, int32(t))
		}
		ends[i] = len(all)
		own := d.termIdx[start:]
		slices.Sort(own) // for postings' check
		for j := 1; j < len(own); j++ {
			if own[j] == own[j-1] {
				d.Fail("doc %d lists a term twice", i)
				return nil
			}
		}
	}
	d.termEnds = ends
	start := 0
	for i := range out { // full slices: Put's appends never reach the next doc's
		out[i].terms = all[start:ends[i]:ends[i]]
		start = ends[i]
	}
	return out
}

// postings reads each term's postings and checks them against the docs:
// sorted, in range, and each doc's postings exactly the terms it lists
// (what Remove walks).
func (d *decoder) postings(terms []string, docs []doc) map[string][]posting {
	post := make(map[string][]posting, len(terms))
	seen := make([]int, len(docs))
	for ti, w := range terms {
		n := d.Count(5) // doc delta and four tfs
		if d.Err() != nil {
			return nil
		}
		if n == 0 {
			d.Fail("no postings for a term")
			return nil
		}
		ps := make([]posting, n)
		prev := int64(-1)
		for j := range ps {
			id := prev + int64(d.Uint(uint64(len(docs))))
			if d.Err() != nil || id <= prev || id >= int64(len(docs)) {
				d.Fail("a posting out of order")
				return nil
			}
			prev = id
			// The terms come in order of index, so each doc's postings
			// meet its sorted term indexes in order.
			if k := d.termStart(int(id)) + seen[id]; k >= d.termEnds[id] || d.termIdx[k] != int32(ti) {
				d.Fail("a posting of a term doc %d does not list", id)
				return nil
			}
			ps[j].doc = int32(id)
			for f := range ps[j].tf {
				ps[j].tf[f] = uint16(d.Uint(math.MaxUint16))
			}
			seen[id]++
		}
		post[w] = ps
	}
	for id := range docs {
		if seen[id] != len(docs[id].terms) {
			d.Fail("doc %d has %d terms and %d postings", id, len(docs[id].terms), seen[id])
			return nil
		}
	}
	return post
}

// termStart is where doc id's term indexes begin in termIdx.
func (d *decoder) termStart(id int) int {
	if id == 0 {
		return 0
	}
	return d.termEnds[id-1]
}
