package pii

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// The built-in detectors, by the name Options.Detect uses.
const (
	// Email detects e-mail addresses (local@domain.tld), also
	// percent-encoded as in a URL (local%40domain.tld): both have the
	// token of the decoded address.
	Email = "email"
	// Phone detects phone numbers written as such: international with a
	// leading + (+33 1 23 45 67 89, +1-555-123-4567) or North American
	// (555) 123-4567 / 555-123-4567 / 555.123.4567. A bare run of digits is
	// not a phone (it is as likely an id).
	Phone = "phone"
	// Name is the kind of the names of Options.Names.
	Name = "name"
)

// MinKeyBytes is the shortest key New accepts.
const MinKeyBytes = 16

// hexDigits is the number of hex digits of a token (48 bits).
const hexDigits = 12

// Pattern is a custom detector: a name (its tokens' kind) and a regexp.
type Pattern struct {
	// Name is the kind: lower case letters and digits, starting with a
	// letter (e.g. "iban"); its tokens read PII_IBAN_....
	Name string `json:"name"`
	// Regexp is RE2 syntax (Go's regexp). Every match is replaced.
	Regexp string `json:"regexp"`
}

// Options configure New. Key is required; the zero value of the rest
// detects nothing and restores nowhere.
type Options struct {
	// Key keys the tokens' HMAC: at least MinKeyBytes bytes, kept secret
	// and stable (the same key gives the same tokens after a restart).
	Key []byte
	// Detect names the built-in detectors to run: Email, Phone.
	Detect []string
	// Names are personal names, matched as whole words, ignoring case.
	Names []string
	// Patterns are custom detectors.
	Patterns []Pattern
	// RestoreTo lists the drivers (and scopes) whose requests get the real
	// values back (see ParseScope). Default: none.
	RestoreTo []string
	// Map keeps token -> value for restoring (nil: in memory only, lost at
	// exit).
	Map Map
}

// detector is one compiled pattern.
type detector struct {
	kind string // "EMAIL"
	re   *regexp.Regexp
	// pre says whether b may hold a match at all (nil: always).
	pre func(b []byte) bool
	// find replaces re when set (the names, the e-mails).
	find func(b []byte) [][]int
	// canon, when set, turns a match into the value it stands for (the
	// token's value): a percent-encoded e-mail is its decoded address.
	canon func(string) string
}

// Tokenizer replaces detected values by tokens and restores them. It is
// safe for concurrent use. A nil *Tokenizer is valid and does nothing:
// every method returns its input (and the wrappers return what they wrap).
type Tokenizer struct {
	dets    []detector
	restore []Scope
	mapping Map
	hmacs   sync.Pool
	// known caches the tokens already in the map (token -> value), so a
	// value seen again costs no map write.
	known sync.Map
}

var (
	emailRE = lazyre.New(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)
	// emailEncRE finds an e-mail percent-encoded in a URL or a form
	// (ada%40example.com, ada%2Bnews%40example.com), its group 1: what
	// precedes it is an escape, a non-word character or the start.
	emailEncRE = lazyre.New(`(?:%[0-9A-Fa-f]{2}|[^A-Za-z0-9._%+\-]|^)((?:[A-Za-z0-9._\-]|%2[Bb])+%40[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,})`)
	phoneRE    = lazyre.New(`\+\d{1,3}(?:[ .\-]?\(?\d{1,4}\)?){2,5}\d|\(\d{3}\) ?\d{3}[ .\-]\d{4}\b|\b\d{3}[.\-]\d{3}[.\-]\d{4}\b`)
	// tokenRE finds tokens, in any letter case.
	tokenRE  = lazyre.New(`(?i)PII_([A-Z][A-Z0-9]*)_([0-9A-F]{12})`)
	kindName = lazyre.New(`^[a-z][a-z0-9]*$`)
)

// New compiles the detectors of opts (once: tokenizing compiles nothing).
func New(opts Options) (*Tokenizer, error) {
	if len(opts.Key) < MinKeyBytes {
		return nil, fmt.Errorf("%w: the key has %d bytes, at least %d are needed", ErrConfig, len(opts.Key), MinKeyBytes)
	}
	t := &Tokenizer{mapping: opts.Map}
	if t.mapping == nil {
		t.mapping = NewMemMap()
	}
	key := slices.Clone(opts.Key)
	t.hmacs.New = func() any { return hmac.New(sha256.New, key) }
	dets, err := detectors(opts)
	if err != nil {
		return nil, err
	}
	t.dets = dets
	for _, s := range opts.RestoreTo {
		sc, err := ParseScope(s)
		if err != nil {
			return nil, err
		}
		t.restore = append(t.restore, sc)
	}
	return t, nil
}

// detectors compiles the detectors opts names, in order: the built-in
// ones, the names, the patterns.
func detectors(opts Options) ([]detector, error) {
	var set detectorSet
	for _, name := range opts.Detect {
		if err := set.add(builtinDetector(name)); err != nil {
			return nil, err
		}
	}
	nm, err := newNameMatcher(opts.Names)
	if err != nil {
		return nil, err
	}
	if nm != nil {
		if err := set.add(detector{kind: "NAME", pre: nm.mayHold, find: nm.find}, nil); err != nil {
			return nil, err
		}
	}
	for _, p := range opts.Patterns {
		if err := set.add(patternDetector(p)); err != nil {
			return nil, err
		}
	}
	return set.dets, nil
}

// detectorSet is the detectors compiled so far, each kind once.
type detectorSet struct {
	dets  []detector
	kinds map[string]bool
}

// add adds d, the result of a detector's compilation (err: it failed),
// refusing a kind already there.
func (s *detectorSet) add(d detector, err error) error {
	if err != nil {
		return err
	}
	if s.kinds[d.kind] {
		return fmt.Errorf("%w: the pattern %q is given twice: give each a distinct name", ErrConfig, strings.ToLower(d.kind))
	}
	if s.kinds == nil {
		s.kinds = map[string]bool{}
	}
	s.kinds[d.kind] = true
	s.dets = append(s.dets, d)
	return nil
}

// builtinDetector is the detector Options.Detect names name.
func builtinDetector(name string) (detector, error) {
	switch name {
	case Email:
		return detector{kind: "EMAIL", pre: mayHoldEmail, find: findEmails, canon: decodeEmail}, nil
	case Phone:
		return detector{kind: "PHONE", re: phoneRE(), pre: enoughDigits}, nil
	}
	return detector{}, fmt.Errorf("%w: unknown detector %q: use %q or %q, names for a list of names, or patterns for a regexp of your own", ErrConfig, name, Email, Phone)
}

// patternDetector compiles the custom pattern p, refusing a name that is
// malformed or a built-in detector's, and a regexp that does not compile
// or matches the empty string.
func patternDetector(p Pattern) (detector, error) {
	if !kindName().MatchString(p.Name) {
		return detector{}, fmt.Errorf("%w: pattern name %q: use lower case letters and digits, starting with a letter (e.g. \"iban\")", ErrConfig, p.Name)
	}
	if p.Name == Email || p.Name == Phone || p.Name == Name {
		return detector{}, fmt.Errorf("%w: pattern name %q is a built-in detector's: choose another name", ErrConfig, p.Name)
	}
	re, err := regexp.Compile(p.Regexp)
	if err != nil {
		return detector{}, fmt.Errorf("%w: pattern %q: %v (the syntax is Go's RE2: https://pkg.go.dev/regexp/syntax)", ErrConfig, p.Name, err)
	}
	if re.MatchString("") {
		return detector{}, fmt.Errorf("%w: pattern %q matches the empty string, which would put a token between every character: make it match at least one character", ErrConfig, p.Name)
	}
	return detector{kind: strings.ToUpper(p.Name), re: re}, nil
}

// mayHoldEmail reports whether b may hold an e-mail, plain or
// percent-encoded.
func mayHoldEmail(b []byte) bool {
	return bytes.IndexByte(b, '@') >= 0 || bytes.Contains(b, []byte("%40"))
}

// findEmails returns the e-mails of b, plain and percent-encoded.
func findEmails(b []byte) [][]int {
	var out [][]int
	if bytes.IndexByte(b, '@') >= 0 {
		out = emailRE().FindAllIndex(b, -1)
	}
	if bytes.Contains(b, []byte("%40")) {
		for _, m := range emailEncRE().FindAllSubmatchIndex(b, -1) {
			out = append(out, m[2:4])
		}
	}
	return out
}

// decodeEmail is the address a percent-encoded match stands for, so that
// ada%40example.com has the token of ada@example.com (and restores, in a
// URL, to ada%40example.com again).
func decodeEmail(m string) string {
	if !strings.Contains(m, "%40") || strings.IndexByte(m, '@') >= 0 {
		return m
	}
	if v, err := url.PathUnescape(m); err == nil {
		return v
	}
	return m
}

// enoughDigits reports whether b holds at least 7 digits: no phone
// number has fewer.
func enoughDigits(b []byte) bool {
	n := 0
	for _, c := range b {
		if c >= '0' && c <= '9' {
			if n++; n >= 7 {
				return true
			}
		}
	}
	return false
}

// Token returns the token of value under kind (a detector's name, e.g.
// "email"), the one tokenizing puts in its place. It does not record it in
// the map.
func (t *Tokenizer) Token(kind, value string) string {
	return t.token(strings.ToUpper(kind), value)
}

func (t *Tokenizer) token(kind, value string) string {
	h := t.hmacs.Get().(hash.Hash)
	h.Reset()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(value))
	var sum [sha256.Size]byte
	out := h.Sum(sum[:0])
	t.hmacs.Put(h)
	var buf [4 + 32 + 1 + hexDigits]byte
	b := append(buf[:0], "PII_"...)
	b = append(b, kind...)
	b = append(b, '_')
	b = hex.AppendEncode(b, out[:hexDigits/2])
	return string(b)
}

// span is one match in a string.
type span struct {
	start, end int
	kind       string
	canon      func(string) string // nil: the value is the match
}

// matches returns the non-overlapping matches in b, in order (the earliest
// first, the longest at one start), minus those touching a token already
// there; nil when there is none (and then nothing was allocated).
func (t *Tokenizer) matches(b []byte) []span {
	var out []span
	for i := range t.dets {
		d := &t.dets[i]
		for _, m := range d.findAll(b) {
			if m[1] > m[0] {
				out = append(out, span{m[0], m[1], d.kind, d.canon})
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return out[i].end > out[j].end
	})
	var toks [][]int
	if mayHoldToken(b) {
		toks = tokenRE().FindAllIndex(b, -1)
	}
	return apart(out, toks)
}

// findAll returns the matches of d in b (none when its prefilter rules b
// out).
func (d *detector) findAll(b []byte) [][]int {
	switch {
	case d.pre != nil && !d.pre(b):
		return nil
	case d.find != nil:
		return d.find(b)
	}
	return d.re.FindAllIndex(b, -1)
}

// apart keeps, in place, the sorted spans that overlap neither an earlier
// kept span nor a token (toks) already in the text.
func apart(spans []span, toks [][]int) []span {
	kept := spans[:0]
	end := 0
	for _, s := range spans {
		if s.start < end {
			continue
		}
		if slices.ContainsFunc(toks, func(tk []int) bool { return s.start < tk[1] && tk[0] < s.end }) {
			continue
		}
		kept = append(kept, s)
		end = s.end
	}
	return kept
}

// batch gathers the pairs one call met that the map may lack, so that
// they are written in one transaction before the call returns.
type batch struct{ pairs []Pair }

// replace writes b with every match replaced by its token to dst; the
// tokens not known yet are added to bt.
func (t *Tokenizer) replace(dst, b []byte, ms []span, bt *batch) ([]byte, error) {
	last := 0
	for _, m := range ms {
		value := string(b[m.start:m.end])
		if m.canon != nil {
			value = m.canon(value)
		}
		tok := t.token(m.kind, value)
		if v, ok := t.known.Load(tok); ok {
			if v.(string) != value {
				return nil, fmt.Errorf("%w: %s stands for two different values; nothing was sent", ErrCollision, tok)
			}
		} else {
			bt.pairs = append(bt.pairs, Pair{Token: tok, Value: value})
		}
		dst = append(dst, b[last:m.start]...)
		dst = append(dst, tok...)
		last = m.end
	}
	return append(dst, b[last:]...), nil
}

// flush writes bt's pairs to the map (one durable write), then remembers
// them.
func (t *Tokenizer) flush(bt *batch) error {
	if len(bt.pairs) == 0 {
		return nil
	}
	seen := make(map[string]string, len(bt.pairs))
	uniq := bt.pairs[:0]
	for _, p := range bt.pairs {
		if v, ok := seen[p.Token]; ok {
			if v != p.Value {
				return fmt.Errorf("%w: %s stands for two different values; nothing was sent", ErrCollision, p.Token)
			}
			continue
		}
		seen[p.Token] = p.Value
		uniq = append(uniq, p)
	}
	if err := t.mapping.Put(uniq...); err != nil {
		return err
	}
	for _, p := range uniq {
		t.known.Store(p.Token, p.Value)
	}
	return nil
}

// String returns s with every detected value replaced by its token (and
// recorded in the map). s is returned as is when nothing matches.
func (t *Tokenizer) String(s string) (string, error) {
	if t == nil || len(t.dets) == 0 {
		return s, nil
	}
	ms := t.matches([]byte(s))
	if ms == nil {
		return s, nil
	}
	var bt batch
	out, err := t.replace(make([]byte, 0, len(s)+len(ms)*16), []byte(s), ms, &bt)
	if err == nil {
		err = t.flush(&bt)
	}
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// mayHoldToken reports whether b may hold a token: "pii_" in any case.
func mayHoldToken(b []byte) bool {
	for i := 3; i < len(b); i++ {
		if b[i] == '_' && (b[i-1]|0x20) == 'i' && (b[i-2]|0x20) == 'i' && (b[i-3]|0x20) == 'p' {
			return true
		}
	}
	return false
}
