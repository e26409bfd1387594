package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Redacted replaces every redacted value in the journal.
const Redacted = "[REDACTED]"

// Minimum lengths of the values scrubbed by value: shorter ones would
// mangle ordinary text.
const (
	minSecret = 4 // a configured secret (AddSecret, Options.Secrets)
	minFound  = 6 // a value found under a credential name, in a URL or in a secret file
)

// DefaultRedactedFields are field names (matched case-insensitively, at any
// depth of a request, a response, a run's arguments or result) whose values
// never reach the journal. Besides these exact names, a name is a
// credential's when one of its words (split at "_", "-", ".", and
// camelCase) is one of credentialWords, or when it ends in "key" after a
// word such as "api", "private", "secret" or "access" (api_key, X-Api-Key,
// privateKey); see IsCredentialName.
var DefaultRedactedFields = []string{
	"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key",
	"api_key", "apikey", "api-key", "password", "passwd", "pwd", "secret", "client_secret",
	"token", "access_token", "refresh_token", "id_token", "x-auth-token", "private-token",
	"dsn", "credentials", "credential", "passphrase", "private_key", "signature", "bearer",
}

// credentialWords make any name a credential's name (x-auth-token,
// next_page_token, db_password, aws_secret_access_key). Plural "tokens" is
// not one: token counts (prompt_tokens) are not credentials.
var credentialWords = []string{
	"token", "secret", "secrets", "password", "passwd", "passphrase", "credential", "credentials",
	"apikey", "cookie", "authorization", "signature", "bearer", "dsn", "jwt",
}

// keyQualifiers are the words before a final "key" that make it a
// credential's name (api_key, private-key, accessKey); "sort_key" or
// "primary_key" are not.
var keyQualifiers = []string{"api", "private", "secret", "access", "auth", "signing", "encryption", "client", "master", "license", "ssh", "session"}

// argNames are credential names only in a run's arguments: an argument
// named "key" or "pass" is a credential, a "key" column in a SQL row is not.
// ("auth" is not one: it names a secret binding, as in fetch's init.auth.)
var argNames = []string{"key", "pass"}

// queryNames are credential names only as URL query parameters
// (?key=... in Google's APIs, ?sig= in signed URLs, ?auth= in Firebase's).
var queryNames = []string{"key", "sig", "auth"}

// nameMode says where a name is read: the rules differ slightly.
type nameMode int

const (
	inData  nameMode = iota // requests, responses, results
	inArgs                  // a run's arguments
	inQuery                 // a URL's query parameters
)

// IsCredentialName reports whether a request or response field, a header,
// or an argument called name holds a credential by default (see
// DefaultRedactedFields). Matching is case-insensitive.
func IsCredentialName(name string) bool { return credentialName(name, nil, inData) }

func credentialName(name string, extra map[string]bool, mode nameMode) bool {
	for _, f := range DefaultRedactedFields {
		if len(f) == len(name) && strings.EqualFold(f, name) {
			return true
		}
	}
	if len(extra) > 0 && extra[strings.ToLower(name)] {
		return true
	}
	var special []string
	switch mode {
	case inArgs:
		special = argNames
	case inQuery:
		special = queryNames
	}
	for _, f := range special {
		if len(f) == len(name) && strings.EqualFold(f, name) {
			return true
		}
	}
	prev := ""
	for i := 0; ; {
		start, end := nextWord(name, i)
		if start < 0 {
			return false
		}
		w := name[start:end]
		for _, c := range credentialWords {
			if len(c) == len(w) && strings.EqualFold(c, w) {
				return true
			}
		}
		if len(w) == 3 && strings.EqualFold(w, "key") {
			for _, q := range keyQualifiers {
				if len(q) == len(prev) && strings.EqualFold(q, prev) {
					return true
				}
			}
		}
		prev, i = w, end
	}
}

// nextWord returns the bounds of the first word of name at or after i, or
// -1: words are runs of letters and digits (and any non-ASCII), split at
// other ASCII characters and where a lower-case letter is followed by an
// upper-case one (apiKey is api, Key).
func nextWord(name string, i int) (start, end int) {
	isWord := func(c byte) bool {
		return c >= utf8.RuneSelf || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i < len(name) && !isWord(name[i]) {
		i++
	}
	if i == len(name) {
		return -1, -1
	}
	start = i
	for i++; i < len(name) && isWord(name[i]); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' && 'a' <= name[i-1] && name[i-1] <= 'z' {
			break
		}
	}
	return start, i
}

// secretSet is a set of literal secrets scrubbed by value, in every
// spelling they may take on the way (raw, URL-escaped, base64), longest
// first so that a value containing another is replaced whole.
type secretSet struct {
	mu   sync.RWMutex
	list []secretForm
	seen map[string]bool
}

// secretForm is one spelling, with its JSON-escaped form when that
// differs (what the bytes of a canonical document hold).
type secretForm struct {
	text string
	esc  []byte
}

// add registers v (at least min bytes) in all its spellings; it reports
// whether v was new.
func (s *secretSet) add(v string, min int) bool {
	if len(v) < min || v == Redacted {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[v] {
		return false
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, f := range []string{v, url.QueryEscape(v), url.PathEscape(v), base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))} {
		if len(f) < min || s.seen[f] {
			continue
		}
		s.seen[f] = true
		sf := secretForm{text: f}
		if e := jsonInner(f); e != f {
			sf.esc = []byte(e)
		}
		s.list = append(s.list, sf)
	}
	slices.SortStableFunc(s.list, func(a, b secretForm) int {
		if len(a.text) != len(b.text) {
			return len(b.text) - len(a.text)
		}
		return strings.Compare(a.text, b.text)
	})
	return true
}

// jsonInner is s as it appears between the quotes of a canonical JSON string.
func jsonInner(s string) string {
	b := appendString(nil, s)
	return string(b[1 : len(b)-1])
}

// replace scrubs every spelling of every secret from str.
func (s *secretSet) replace(str string) string {
	if s == nil {
		return str
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.list {
		if strings.Contains(str, f.text) {
			str = strings.ReplaceAll(str, f.text, Redacted)
		}
	}
	return str
}

// in reports whether raw holds a secret (in a canonical document's bytes).
func (s *secretSet) in(raw []byte) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.list {
		if bytes.Contains(raw, []byte(f.text)) || (f.esc != nil && bytes.Contains(raw, f.esc)) {
			return true
		}
	}
	return false
}

// addFound registers a credential found under a credential name or in a
// URL: the value, and for "Scheme token" forms (Bearer, Basic, Token) the
// token, and a Basic credential's decoded "user:password" and password.
func (s *secretSet) addFound(v string) {
	if s == nil {
		return
	}
	v = strings.TrimSpace(v)
	s.add(v, minFound)
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok {
		return
	}
	tok = strings.TrimSpace(tok)
	s.add(tok, minFound)
	if strings.EqualFold(scheme, "basic") {
		if dec, err := base64.StdEncoding.DecodeString(tok); err == nil {
			s.add(string(dec), minFound)
			if _, pw, ok := strings.Cut(string(dec), ":"); ok {
				s.add(pw, minFound)
			}
		}
	}
}

// addContent registers the content of a secret file (a sealed answer): the
// whole text, each line, and each value of a KEY=VALUE or KEY: VALUE line,
// so that a tool passing one of them on (to its result, a request, a
// write) does not put it in the journal either.
func (s *secretSet) addContent(raw json.RawMessage) {
	if s == nil {
		return
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		text = string(raw)
	}
	s.addText(text)
}

// addText is addContent for the text itself.
func (s *secretSet) addText(text string) {
	s.add(text, minSecret)
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s.add(line, minFound)
		if i := strings.IndexAny(line, "=:"); i > 0 {
			v := strings.TrimSpace(line[i+1:])
			v = strings.Trim(v, `"'`)
			s.add(strings.TrimSuffix(v, ","), minFound)
		}
	}
}

// redactor strips credentials at the choke point and makes JSON canonical
// (object keys sorted, no insignificant space, numbers as written), so the
// same request always has the same bytes and a redacted journal still
// replays: the live request is redacted the same way before it is compared.
//
// A value is redacted when it is held under a credential name
// (DefaultRedactedFields, Options.Redact), when it is a credential in a URL
// (a query parameter with a credential name, a userinfo password), or when
// it holds a literal secret: one configured (AddSecret) or one found
// earlier in the same run (a scope).
type redactor struct {
	extra  map[string]bool // Options.Redact, lower-cased
	global secretSet       // AddSecret, Options.Secrets
}

func newRedactor(extra []string) *redactor {
	r := &redactor{extra: map[string]bool{}}
	for _, f := range extra {
		r.extra[strings.ToLower(f)] = true
	}
	return r
}

// AddSecret registers a literal secret (an API key, a token, a DSN's
// password): it is replaced by [REDACTED] wherever it appears, raw,
// URL-escaped or base64-encoded, in a request, a response, an error, a
// run's arguments, result or failure reason. Values shorter than 4 bytes
// are ignored (they would mangle ordinary text). The runtime registers
// every configured secret here (Options.Secrets does the same at Open).
func (j *Journal) AddSecret(secret string) {
	j.redact.global.add(secret, minSecret)
}

// AddSecretContent registers the content of a secret file (an .env file,
// a key): the whole text, each line, and each value of its KEY=VALUE or
// KEY: VALUE lines are scrubbed by value from everything the journal
// writes, like AddSecret's.
func (j *Journal) AddSecretContent(content []byte) {
	j.redact.global.addText(string(content))
}

// pass is one redaction of one document.
type pass struct {
	r     *redactor
	scope *secretSet // the run's found secrets; nil: none
	mode  nameMode
	// collect, when set, is where values found under credential names or
	// in URLs are registered before the document is scrubbed by value.
	collect *secretSet
	changed bool
}

// text scrubs a string: credentials in URLs, then literal secrets.
func (p *pass) text(s string) string {
	out := redactURLs(s, p.r.extra, p.collect)
	out = p.r.global.replace(out)
	out = p.scope.replace(out)
	if out != s {
		p.changed = true
	}
	return out
}

// text is the global scrub of a string (no run scope).
func (r *redactor) text(s string) string {
	p := pass{r: r}
	return p.text(s)
}

// textIn scrubs s with a run's scope too.
func (r *redactor) textIn(s string, scope *secretSet) string {
	p := pass{r: r, scope: scope}
	return p.text(s)
}

// json returns the canonical, redacted form of raw (raw itself when it is
// empty or not JSON), with no run scope.
func (r *redactor) json(raw json.RawMessage) json.RawMessage {
	p := pass{r: r}
	return p.json(raw)
}

// jsonIn is json with a run's scope: values found under credential names or
// in URLs are added to scope first, then everything the scope holds is
// scrubbed too.
func (r *redactor) jsonIn(raw json.RawMessage, scope *secretSet) json.RawMessage {
	p := pass{r: r, scope: scope, collect: scope}
	return p.json(raw)
}

func (p *pass) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || (p.mode == inData && p.r.canonical(raw, p.scope)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return json.RawMessage(p.text(string(raw))) // not one JSON value: keep it, minus secrets
	}
	if p.collect != nil {
		// First what the document itself says is a credential, so that the
		// same value elsewhere in it (an echo, a body) goes too, whatever
		// the order of its fields.
		p.gather(v)
	}
	v = p.walk(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// gather registers in p.collect the credentials v holds by name or in URLs.
func (p *pass) gather(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if credentialName(k, p.r.extra, p.mode) {
				leaves(val, p.collect.addFound)
			} else {
				p.gather(val)
			}
		}
	case []any:
		for _, e := range x {
			p.gather(e)
		}
	case string:
		redactURLs(x, p.r.extra, p.collect)
	}
}

// leaves calls fn with every string under v.
func leaves(v any, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			leaves(e, fn)
		}
	case []any:
		for _, e := range x {
			leaves(e, fn)
		}
	case string:
		fn(x)
	case json.Number:
		fn(x.String())
	}
}

// walk redacts v in place (data rules, no run scope).
func (r *redactor) walk(v any) any {
	p := pass{r: r}
	return p.walk(v)
}

func (p *pass) walk(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if credentialName(k, p.r.extra, p.mode) {
				if s, ok := val.(string); !ok || s != Redacted {
					p.changed = true
				}
				x[k] = Redacted
			} else {
				x[k] = p.walk(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = p.walk(x[i])
		}
	case string:
		return p.text(x)
	}
	return v
}

// args redacts a run's arguments with the argument rules, registering what
// it removes in scope; it reports whether anything was removed.
func (r *redactor) args(raw json.RawMessage, scope *secretSet) (json.RawMessage, bool) {
	p := pass{r: r, scope: scope, collect: scope, mode: inArgs}
	out := p.json(raw)
	return out, p.changed
}

// redactURLs replaces, in s, the values of query parameters with credential
// names and the passwords of URLs' userinfo (scheme://user:PASSWORD@host)
// with [REDACTED], registering the removed values in found (when not nil).
func redactURLs(s string, extra map[string]bool, found *secretSet) string {
	var b strings.Builder
	last := 0
	scanURLSecrets(s, extra, func(start, end int) {
		v := s[start:end]
		if found != nil {
			found.addFound(v)
			if u, err := url.QueryUnescape(v); err == nil {
				found.addFound(u)
			}
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	})
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// scanURLSecrets calls fn with the [start, end) of every credential in s
// that is not [REDACTED] already: a query parameter's value (after "?",
// "&" or ";", a name with credential words, "=") or a userinfo password.
// It works on a string or on the bytes of a canonical JSON document alike
// (the characters it looks for are never escaped in JSON). With a nil fn it
// stops at the first one. It returns how many it found.
func scanURLSecrets[T string | []byte](s T, extra map[string]bool, fn func(start, end int)) (n int) {
	valueEnd := func(i int) int {
		for i < len(s) && !strings.ContainsRune("&#;\"'<> \t\r\n", rune(s[i])) {
			i++
		}
		return i
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '?', '&', ';':
			j := i + 1
			for j < len(s) && paramChar(s[j]) {
				j++
			}
			if j == i+1 || j >= len(s) || s[j] != '=' || !credentialName(string(s[i+1:j]), extra, inQuery) {
				continue
			}
			end := valueEnd(j + 1)
			if end > j+1 && string(s[j+1:end]) != Redacted {
				if n++; fn == nil {
					return n
				}
				fn(j+1, end)
			}
			i = end - 1
		case ':':
			if i+2 >= len(s) || s[i+1] != '/' || s[i+2] != '/' {
				continue
			}
			// The authority: up to the path, query or fragment.
			a := i + 3
			end := a
			for end < len(s) && !strings.ContainsRune("/?#\"'<> \t\r\n", rune(s[end])) {
				end++
			}
			at := -1
			for k := end - 1; k >= a; k-- {
				if s[k] == '@' {
					at = k
					break
				}
			}
			if at < 0 {
				i = end - 1
				continue
			}
			colon := -1
			for k := a; k < at; k++ {
				if s[k] == ':' {
					colon = k
					break
				}
			}
			if colon >= 0 && colon+1 < at && string(s[colon+1:at]) != Redacted {
				if n++; fn == nil {
					return n
				}
				fn(colon+1, at)
			}
			i = end - 1
		}
	}
	return n
}

// paramChar reports the characters of a query parameter's name.
func paramChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '[' || c == ']' || c == '~'
}

// sealOf is the Entry.Sealed form of an answer: its SHA-256.
func sealOf(val json.RawMessage) string {
	sum := sha256.Sum256(val)
	return "sha256:" + hex.EncodeToString(sum[:])
}
