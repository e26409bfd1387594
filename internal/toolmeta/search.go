package toolmeta

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// BM25F parameters and the ideal document of the score normalisation; the
// ranking and the normalisation are documented in doc.go.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// idealTF is the pseudo term frequency of the ideal document: once in
	// the description, at average length.
	idealTF = 1.0
)

type fieldID int

const (
	fieldName fieldID = iota
	fieldTags
	fieldDesc
	fieldPath
	numFields
)

var fieldWeights = [numFields]float64{fieldName: 3, fieldTags: 2, fieldDesc: 1, fieldPath: 0.4}

// stopWords carry no meaning in a tool search.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or of to in on for with by from at as into over per via
		is are be been was were it its this that these those which what how
		i me my we our you your can could will would should do does need want please some
		tool tools`) {
		m[w] = true
	}
	return m
}()

// caseBreak reports whether a word breaks before the letter r, after
// prev and followed by rest: fooBar -> foo|Bar; HTTPResponse ->
// HTTP|Response; but URLs and getURLs2 keep their plural s.
func caseBreak(prev, r rune, rest string) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	next, n := utf8.DecodeRuneInString(rest)
	after, _ := utf8.DecodeRuneInString(rest[n:])
	plural := next == 's' && !unicode.IsLower(after)
	return unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && unicode.IsLower(next) && !plural
}

// tokenize appends the index terms of s to out.
func tokenize(s string, out []string) []string { return tokenizeWith(s, out, nil) }

// maxStems bounds an index's memo of stems (stems), about 2 MB: a
// registry's vocabulary is far smaller, and past the bound words are
// stemmed each time.
const maxStems = 1 << 15

// tokenizeWith is tokenize, stemming through the memo stems when it is
// not nil (words to their stems, added to until maxStems): the same words
// recur across a registry's tools, and a stem costs an allocation.
func tokenizeWith(s string, out []string, stems map[string]string) []string {
	start, n := 0, 0 // the word so far: s[start:i], n runes, the first one first
	var first rune
	flush := func(end int) {
		if n == 0 {
			return
		}
		// A word is a run of s: its lower case needs no copy when it is
		// lower case already, the common case.
		w := strings.ToLower(s[start:end])
		single := n == 1 && unicode.IsLetter(first)
		n = 0
		if stopWords[w] || single { // single letters: the s of "tool's", x, ...
			return
		}
		if stems == nil {
			out = append(out, stem(w))
			return
		}
		st, ok := stems[w]
		if !ok {
			st = stem(w)
			if len(stems) < maxStems {
				// Copies: w and its stem may be runs of a long text.
				w = strings.Clone(w)
				st = strings.Clone(st)
				stems[w] = st
			}
		}
		out = append(out, st)
	}
	var prev rune
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = 0
			continue
		}
		if n > 0 && caseBreak(prev, r, s[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if n == 0 {
			start, first = i, r
		}
		n++
		prev = r
	}
	flush(len(s))
	return out
}

// posting is one tool's term frequencies, per field, for one term.
type posting struct {
	doc int32
	tf  [numFields]uint16
}

// doc is one indexed tool.
type doc struct {
	path  string
	lens  [numFields]uint32
	terms []string // distinct terms, to remove the doc from their postings
	usage int
	live  bool
}

// Inverted is the inverted index of a set of tools (the registry's): BM25F
// over name, tags, description and path. IMPORTANT: it is not safe for
// concurrent use: its owner (the Registry) MUST guard it; Index is the
// guarded one that keeps its tools.
type Inverted struct {
	docs   []doc
	byPath map[string]int32
	free   []int32
	// post holds, per term, its postings sorted by doc id.
	post   map[string][]posting
	n      int
	sumLen [numFields]int
	// noPath leaves the path field out (NewIndexWithoutPaths).
	noPath bool
	// stems is Put's memo of stems (tokenizeWith).
	stems map[string]string
	// termAt and tfs are Put's scratch, kept for the next Put: the
	// index in tfs of each term of the tool being indexed, and its term
	// frequencies per field.
	termAt map[string]int
	tfs    [][numFields]uint16
}

// NewInverted returns an empty index.
func NewInverted() *Inverted {
	return &Inverted{byPath: map[string]int32{}, post: map[string][]posting{}}
}

// fieldTexts returns the texts a tool's fields are tokenised from.
func fieldTexts(t *Tool, toolsDir string) [numFields][]string {
	p := strings.TrimPrefix(t.Path, toolsDir+"/")
	if i := strings.LastIndexByte(p, '.'); i > strings.LastIndexByte(p, '/') {
		p = p[:i]
	}
	return [numFields][]string{
		fieldName: {t.Name},
		fieldTags: t.Tags,
		fieldDesc: {t.Description},
		fieldPath: {p},
	}
}

// Put indexes t, replacing what was indexed under its path; toolsDir is
// left out of the indexed path field. The usage it ranks ties by is the
// larger of t.Usage and what was indexed under the path.
func (x *Inverted) Put(t *Tool, toolsDir string) {
	usage := 0
	if id, ok := x.byPath[t.Path]; ok {
		usage = x.docs[id].usage
		x.Remove(t.Path)
	}
	var id int32
	if n := len(x.free); n > 0 {
		id, x.free = x.free[n-1], x.free[:n-1]
	} else {
		id = int32(len(x.docs))
		x.docs = append(x.docs, doc{})
	}
	d := doc{path: t.Path, live: true, usage: max(usage, t.Usage)}
	if x.termAt == nil {
		x.termAt, x.stems = map[string]int{}, map[string]string{}
	}
	clear(x.termAt)
	x.tfs = x.tfs[:0]
	var toks []string
	for f, texts := range fieldTexts(t, toolsDir) {
		if fieldID(f) == fieldPath && x.noPath {
			continue
		}
		for _, s := range texts {
			toks = tokenizeWith(s, toks[:0], x.stems)
			for _, w := range toks {
				i, ok := x.termAt[w]
				if !ok {
					i = len(x.tfs)
					x.termAt[w] = i
					x.tfs = append(x.tfs, [numFields]uint16{})
					d.terms = append(d.terms, w)
				}
				if x.tfs[i][f] < math.MaxUint16 {
					x.tfs[i][f]++
				}
				d.lens[f]++
			}
		}
	}
	for i, w := range d.terms {
		ps := x.post[w]
		j := sort.Search(len(ps), func(j int) bool { return ps[j].doc >= id })
		ps = append(ps, posting{})
		copy(ps[j+1:], ps[j:])
		ps[j] = posting{doc: id, tf: x.tfs[i]}
		x.post[w] = ps
	}
	for f := range d.lens {
		x.sumLen[f] += int(d.lens[f])
	}
	x.docs[id] = d
	x.byPath[t.Path] = id
	x.n++
}

// Remove drops the tool at path from the index (nothing when absent).
func (x *Inverted) Remove(path string) {
	id, ok := x.byPath[path]
	if !ok {
		return
	}
	d := &x.docs[id]
	for _, w := range d.terms {
		ps := x.post[w]
		i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= id })
		if i < len(ps) && ps[i].doc == id {
			ps = append(ps[:i], ps[i+1:]...)
		}
		if len(ps) == 0 {
			delete(x.post, w)
		} else {
			x.post[w] = ps
		}
	}
	for f := range d.lens {
		x.sumLen[f] -= int(d.lens[f])
	}
	*d = doc{}
	delete(x.byPath, path)
	x.free = append(x.free, id)
	x.n--
}

// Used adds one to the usage of the tool at path.
func (x *Inverted) Used(path string) {
	if id, ok := x.byPath[path]; ok {
		x.docs[id].usage++
	}
}

// SetUsage sets the usage of the tool at path (nothing when absent).
func (x *Inverted) SetUsage(path string, usage int) {
	if id, ok := x.byPath[path]; ok {
		x.docs[id].usage = usage
	}
}

// Len is the number of tools indexed.
func (x *Inverted) Len() int { return x.n }

// match is one scored tool.
type match struct {
	doc   int32
	score float64 // normalised, 0..1
	raw   float64 // BM25F
}

// scratch is a search's per-doc accumulators, pooled: a search touches few
// docs but indexes them by id.
type scratch struct {
	norm, raw []float64
	touched   []int32
	terms     []string
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// search returns the best limit matches of query, best first.
func (x *Inverted) search(query string, limit int) []match {
	if x.n == 0 {
		return nil
	}
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	sc.terms = tokenize(query, sc.terms[:0])
	uniq := uniqueTerms(sc.terms)
	if len(uniq) == 0 {
		return nil
	}
	sc.reset(len(x.docs))
	denom := x.accumulate(sc, uniq)
	if limit > 64 {
		return x.sortAll(sc, denom, limit)
	}
	return x.best(sc, denom, limit)
}

// uniqueTerms are the distinct terms, in query order (in terms' storage).
func uniqueTerms(terms []string) []string {
	uniq := terms[:0]
	for _, t := range terms {
		if !slices.Contains(uniq, t) {
			uniq = append(uniq, t)
		}
	}
	return uniq
}

// reset readies the accumulators for n documents (all zero: every search
// zeroes what it touched).
func (sc *scratch) reset(n int) {
	if cap(sc.norm) < n {
		sc.norm = make([]float64, n, n+n/4)
		sc.raw = make([]float64, n, cap(sc.norm))
	}
	sc.norm, sc.raw = sc.norm[:n], sc.raw[:n]
	sc.touched = sc.touched[:0]
}

// accumulate adds every document's BM25F score for the terms to sc.raw,
// and, capped per term at the ideal match's, to sc.norm; it returns the
// sum of the ideal scores (the normalisation's denominator).
func (x *Inverted) accumulate(sc *scratch, terms []string) (denom float64) {
	// Per field: tf / ((1-b) + b·len/avg) = tf / (a + c·len).
	n := float64(x.n)
	var c [numFields]float64
	for f := range c {
		if x.sumLen[f] > 0 {
			c[f] = bm25B * n / float64(x.sumLen[f])
		}
	}
	for _, t := range terms {
		ps := x.post[t]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		ideal := idf * idealTF / (bm25K1 + idealTF)
		denom += ideal
		for i := range ps {
			tf := x.weightedTF(&ps[i], &c)
			sc.add(ps[i].doc, idf*tf/(bm25K1+tf), ideal)
		}
	}
	return denom
}

// weightedTF is the posting p's term frequency, normalised by each field's
// length (c: see accumulate) and weighted by field.
func (x *Inverted) weightedTF(p *posting, c *[numFields]float64) float64 {
	d := &x.docs[p.doc]
	var tf float64
	for f := fieldID(0); f < numFields; f++ {
		if p.tf[f] == 0 {
			continue
		}
		norm := 1.0
		if c[f] != 0 {
			norm = (1 - bm25B) + c[f]*float64(d.lens[f])
		}
		tf += fieldWeights[f] * float64(p.tf[f]) / norm
	}
	return tf
}

// add adds the score s of one term to document doc (capped at ideal in
// norm).
func (sc *scratch) add(doc int32, s, ideal float64) {
	if sc.raw[doc] == 0 {
		sc.touched = append(sc.touched, doc)
	}
	sc.raw[doc] += s
	sc.norm[doc] += min(s, ideal)
}

// take is document id's match, its accumulators zeroed for the next search.
func (sc *scratch) take(id int32, denom float64) match {
	m := match{doc: id, score: math.Round(min(sc.norm[id]/denom, 1)*1e4) / 1e4, raw: sc.raw[id]}
	sc.norm[id], sc.raw[id] = 0, 0
	return m
}

// better orders matches: by score, then BM25F, then usage, then path.
func (x *Inverted) better(m, o match) bool {
	if m.score != o.score {
		return m.score > o.score
	}
	if m.raw != o.raw {
		return m.raw > o.raw
	}
	if um, uo := x.docs[m.doc].usage, x.docs[o.doc].usage; um != uo {
		return um > uo
	}
	return x.docs[m.doc].path < x.docs[o.doc].path
}

// sortAll sorts every match (a large limit) and returns the best limit.
func (x *Inverted) sortAll(sc *scratch, denom float64, limit int) []match {
	all := make([]match, len(sc.touched))
	for i, id := range sc.touched {
		all[i] = sc.take(id, denom)
	}
	sort.Slice(all, func(i, j int) bool { return x.better(all[i], all[j]) })
	return all[:min(limit, len(all))]
}

// best keeps the best limit matches in a sorted slice.
func (x *Inverted) best(sc *scratch, denom float64, limit int) []match {
	top := make([]match, 0, min(limit, len(sc.touched)))
	for _, id := range sc.touched {
		m := sc.take(id, denom)
		if len(top) == limit && !x.better(m, top[len(top)-1]) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return x.better(m, top[i]) })
		if len(top) < limit {
			top = append(top, match{})
		}
		copy(top[i+1:], top[i:])
		top[i] = m
	}
	return top
}

// Index is a search index over tools that live outside a registry (the
// MCP servers' tools under /mcp): the same BM25F ranking and 0..1 score
// normalisation as the registry's search, so that a caller can merge both result
// lists by Score. It is safe for concurrent use.
type Index struct {
	mu    sync.RWMutex
	x     *Inverted
	tools map[string]Tool
	// prefix is stripped from paths before they are indexed (as the tools
	// directory is for registered tools).
	prefix string
}

// NewIndex returns an empty Index whose tools' paths start with prefix
// (e.g. "/mcp"), which is left out of the indexed path field.
func NewIndex(prefix string) *Index {
	return &Index{x: NewInverted(), tools: map[string]Tool{}, prefix: prefix}
}

// NewIndexWithoutPaths returns an empty Index whose documents' paths are
// keys only, never searched: a query matches the name, tags and
// description alone (memory items, whose paths are their ids: a query
// "17" MUST NOT find item 17).
func NewIndexWithoutPaths() *Index {
	x := NewInverted()
	x.noPath = true
	return &Index{x: x, tools: map[string]Tool{}}
}

// Put indexes t under t.Path, replacing what was there.
func (i *Index) Put(t Tool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.x.Put(&t, i.prefix)
	i.tools[t.Path] = t.Clone()
}

// Remove drops the tool at path from the index (nothing when absent).
func (i *Index) Remove(path string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.x.Remove(path)
	delete(i.tools, path)
}

// Len is the number of tools indexed.
func (i *Index) Len() int {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.x.n
}

// Search returns the best limit tools for query, best first (limit <= 0:
// DefaultLimit), scored like the registry's search.
func (i *Index) Search(query string, limit int) []Hit {
	if limit <= 0 {
		limit = DefaultLimit
	}
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.x.Hits(query, limit, func(path string) Tool { t := i.tools[path]; return t.Clone() })
}

// Hits returns the best limit documents for query as Hits, each tool a
// copy that tool (the caller's, under its lock) makes of the one at path.
func (x *Inverted) Hits(query string, limit int, tool func(path string) Tool) []Hit {
	ms := x.search(query, limit)
	hits := make([]Hit, 0, len(ms))
	for _, m := range ms {
		hits = append(hits, Hit{Tool: tool(x.docs[m.doc].path), Score: m.score})
	}
	return hits
}

// Verify checks the index's invariants against the tools it should hold
// (path -> usage) and returns what is wrong, nil when nothing is: each
// tool indexed once with its usage, the field lengths summed, every
// posting list non-empty, sorted and pointing at a live document. It is
// for tests (it walks the whole index).
func (x *Inverted) Verify(usage map[string]int) []string {
	var bad []string
	if x.n != len(usage) || len(x.byPath) != len(usage) {
		bad = append(bad, fmt.Sprintf("index holds %d docs (%d paths), want %d tools", x.n, len(x.byPath), len(usage)))
	}
	bad = x.verifyDocs(bad, usage)
	return x.verifyPostings(bad)
}

// verifyDocs adds to bad what is wrong with the documents: each path's
// document, usage and the fields' total lengths.
func (x *Inverted) verifyDocs(bad []string, usage map[string]int) []string {
	var sum [numFields]int
	for p, id := range x.byPath {
		d := x.docs[id]
		u, ok := usage[p]
		if !d.live || d.path != p || !ok {
			bad = append(bad, fmt.Sprintf("index doc %d for %s is %+v (a tool: %v)", id, p, d, ok))
			continue
		}
		if d.usage != u {
			bad = append(bad, fmt.Sprintf("index usage of %s = %d, want %d", p, d.usage, u))
		}
		for f := range sum {
			sum[f] += int(d.lens[f])
		}
	}
	if sum != x.sumLen {
		bad = append(bad, fmt.Sprintf("field lengths %v, index says %v", sum, x.sumLen))
	}
	return bad
}

// verifyPostings adds to bad what is wrong with the postings: empty,
// unsorted, or pointing to a removed document.
func (x *Inverted) verifyPostings(bad []string) []string {
	for w, ps := range x.post {
		if len(ps) == 0 {
			bad = append(bad, fmt.Sprintf("empty postings for %q", w))
		}
		for i, p := range ps {
			if i > 0 && ps[i-1].doc >= p.doc {
				bad = append(bad, fmt.Sprintf("postings of %q not sorted", w))
			}
			if !x.docs[p.doc].live {
				bad = append(bad, fmt.Sprintf("postings of %q point to a dead doc", w))
			}
		}
	}
	return bad
}
