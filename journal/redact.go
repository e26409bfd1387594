package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// Redacted replaces every redacted value in the journal.
const Redacted = "[REDACTED]"

// DefaultRedactedFields are the request and response fields (matched
// case-insensitively, at any depth) whose values never reach the journal.
var DefaultRedactedFields = []string{
	"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key",
	"api_key", "apikey", "api-key", "password", "passwd", "secret", "client_secret",
	"token", "access_token", "refresh_token", "dsn",
}

// redactor strips credentials at the choke point and makes JSON canonical
// (object keys sorted, no insignificant space, numbers as written), so the
// same request always has the same bytes and a redacted journal still
// replays: the live request is redacted the same way before it is compared.
type redactor struct {
	fields map[string]bool
	mu     sync.RWMutex
	values []string // literal secrets registered with AddSecret
}

func newRedactor(extra []string) *redactor {
	r := &redactor{fields: map[string]bool{}}
	for _, f := range append(append([]string{}, DefaultRedactedFields...), extra...) {
		r.fields[strings.ToLower(f)] = true
	}
	return r
}

// AddSecret registers a literal secret (an API key, a DSN password): it is
// replaced by [REDACTED] wherever it appears in a request, a response or an
// error message. Drivers register their configuration secrets here.
func (j *Journal) AddSecret(secret string) {
	if len(secret) < 4 { // too short to replace without mangling ordinary text
		return
	}
	j.redact.mu.Lock()
	j.redact.values = append(j.redact.values, secret)
	j.redact.mu.Unlock()
}

func (r *redactor) text(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

// json returns the canonical, redacted form of raw (raw itself when it is
// empty or not JSON).
func (r *redactor) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || r.isCanonical(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return json.RawMessage(r.text(string(raw))) // not one JSON value: keep it, minus secrets
	}
	v = r.walk(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (r *redactor) walk(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if r.fields[strings.ToLower(k)] {
				x[k] = Redacted
			} else {
				x[k] = r.walk(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = r.walk(x[i])
		}
	case string:
		return r.text(x)
	}
	return v
}
