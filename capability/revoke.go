package capability

// Revocation, locally and across nodes: Revoke and RevokeHolder kill tokens
// here and report each id to the subscribers (who publish it to the other
// nodes); Apply takes in what another node published; Revoked is the whole
// list, for a node that joins or missed messages.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentos-run/agentos/capability/capabilitypb"
)

// MinKeyBytes is the shortest signing key an Authority accepts.
const MinKeyBytes = 32

// maxIDLen bounds the id of an applied revocation (token ids are 24
// hexadecimal digits).
const maxIDLen = 128

// Revocation says that the token with ID, and every token derived from it,
// is dead. Tokens carry the ids of their ancestors (Token.Chain), so a node
// that applies the revocation of a token it never saw still refuses every
// token derived from it, including tokens derived on a third node.
type Revocation struct {
	// ID is the revoked token's id.
	ID string
	// At is when it was revoked, on the revoking node's clock
	// (informational: a revocation never expires).
	At time.Time
	// Sig is HMAC-SHA256, under the signing key, of ID and At: Apply
	// refuses a revocation whose Sig does not match, so only a node holding
	// the key can revoke.
	Sig []byte
}

// revocationMAC is the signature of a revocation of id at (Unix ns).
func (a *Authority) revocationMAC(id string, at int64) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("agentos capability revocation\x00"))
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(at, 10)))
	return m.Sum(nil)
}

func (a *Authority) revocation(id string, at int64) Revocation {
	return Revocation{ID: id, At: time.Unix(0, at).UTC(), Sig: a.revocationMAC(id, at)}
}

// Revoke kills the token with id and, transitively, every token derived
// from it, on this node at once; the subscribers (Subscribe) are told, so
// that the other nodes apply it too. Revoking a revoked id again does
// nothing (and tells no one).
func (a *Authority) Revoke(id string) {
	a.mu.Lock()
	r, fresh := a.revokeLocked(id)
	subs := a.subscribers()
	a.mu.Unlock()
	if fresh {
		notify(subs, r)
	}
}

// RevokeHolder kills every token issued to holder by this Authority (and
// what was derived from them, wherever): call it when a process exits. The
// subscribers are told of every id, one Revocation each.
func (a *Authority) RevokeHolder(holder string) {
	a.mu.Lock()
	var out []Revocation
	for _, id := range a.byHolder[holder] {
		if r, fresh := a.revokeLocked(id); fresh {
			out = append(out, r)
		}
	}
	delete(a.byHolder, holder)
	subs := a.subscribers()
	a.mu.Unlock()
	for _, r := range out {
		notify(subs, r)
	}
}

// revokeLocked records id as revoked now; fresh is false when it already
// was. Called with a.mu held.
func (a *Authority) revokeLocked(id string) (r Revocation, fresh bool) {
	if _, dead := a.revoked[id]; dead {
		return Revocation{}, false
	}
	at := a.now().UnixNano()
	a.revoked[id] = at
	delete(a.uses, id)
	return a.revocation(id, at), true
}

// subscribers returns the current subscribers. Called with a.mu held.
func (a *Authority) subscribers() []func(Revocation) {
	if len(a.subs) == 0 {
		return nil
	}
	keys := make([]int, 0, len(a.subs))
	for k := range a.subs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]func(Revocation), len(keys))
	for i, k := range keys {
		out[i] = a.subs[k]
	}
	return out
}

func notify(subs []func(Revocation), r Revocation) {
	for _, f := range subs {
		f(Revocation{ID: r.ID, At: r.At, Sig: slices.Clone(r.Sig)})
	}
}

// Subscribe has fn called with every revocation this Authority makes
// (Revoke, RevokeHolder), after it took effect here, on the goroutine that
// revoked, in subscription order; never for what Apply takes in (so that
// nodes do not echo each other). It returns the function that ends the
// subscription.
//
// IMPORTANT: fn MUST NOT block or call the Authority: hand the revocation
// to a publisher (the cluster's pub-sub) and return. Revocations made
// before Subscribe are not replayed: read Revoked for those.
func (a *Authority) Subscribe(fn func(Revocation)) (cancel func()) {
	a.mu.Lock()
	k := a.nextSub
	a.nextSub++
	a.subs[k] = fn
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.subs, k)
		a.mu.Unlock()
	}
}

// Apply takes in revocations made by another node's Authority (received
// from the cluster, or from another node's Revoked when this node joins):
// each kills its token and every token derived from it, here, at once. It
// is idempotent: an id already revoked is skipped. It returns how many
// were new. A revocation with an empty or overlong ID, or whose Sig was not
// made under this Authority's key, is refused (ErrInvalid, joined for all
// of them) and the others are still applied. Apply never tells the
// subscribers.
func (a *Authority) Apply(rs ...Revocation) (applied int, err error) {
	var errs []error
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range rs {
		if r.ID == "" || len(r.ID) > maxIDLen {
			errs = append(errs, fmt.Errorf("%w: a revocation needs the id of a token (got %d bytes)", ErrInvalid, len(r.ID)))
			continue
		}
		at := r.At.UnixNano()
		if !hmac.Equal(r.Sig, a.revocationMAC(r.ID, at)) {
			errs = append(errs, fmt.Errorf("%w: the revocation of token %s is not signed with this node's key (another cluster's, or forged): check that every node's capability.signing_key_env holds the same key", ErrInvalid, clipID(r.ID)))
			continue
		}
		if _, dead := a.revoked[r.ID]; dead {
			continue
		}
		a.revoked[r.ID] = at
		delete(a.uses, r.ID)
		applied++
	}
	return applied, errors.Join(errs...)
}

func clipID(id string) string {
	if len(id) > 32 {
		return id[:32] + "..."
	}
	return id
}

// Revoked returns every revocation this Authority knows (made here or
// applied), oldest first: what a node that joins the cluster, or that
// missed messages, passes to its own Apply.
func (a *Authority) Revoked() []Revocation {
	a.mu.Lock()
	out := make([]Revocation, 0, len(a.revoked))
	for id, at := range a.revoked {
		out = append(out, a.revocation(id, at))
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y Revocation) int {
		if c := x.At.Compare(y.At); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}

// Proto returns r as its wire message (capabilitypb.Revocation).
func (r Revocation) Proto() *capabilitypb.Revocation {
	return &capabilitypb.Revocation{Id: r.ID, AtUnixNano: r.At.UnixNano(), Sig: slices.Clone(r.Sig)}
}

// RevocationFromProto returns the Revocation of a wire message (nil: the
// zero Revocation, which Apply refuses).
func RevocationFromProto(p *capabilitypb.Revocation) Revocation {
	if p == nil {
		return Revocation{}
	}
	return Revocation{ID: p.GetId(), At: time.Unix(0, p.GetAtUnixNano()).UTC(), Sig: slices.Clone(p.GetSig())}
}

// RevocationsProto returns a revocation list (Revoked) as its wire message.
func RevocationsProto(rs []Revocation) *capabilitypb.Revocations {
	out := &capabilitypb.Revocations{Revocations: make([]*capabilitypb.Revocation, len(rs))}
	for i, r := range rs {
		out.Revocations[i] = r.Proto()
	}
	return out
}

// RevocationsFromProto returns the revocations of a wire list.
func RevocationsFromProto(p *capabilitypb.Revocations) []Revocation {
	out := make([]Revocation, len(p.GetRevocations()))
	for i, r := range p.GetRevocations() {
		out[i] = RevocationFromProto(r)
	}
	return out
}

// ParseKey decodes a signing key written as hexadecimal or base64
// (standard or URL alphabet, padded or not), surrounding white space
// ignored, and checks it has at least MinKeyBytes bytes. Errors wrap
// ErrKey and never quote the key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: it is empty; generate one with `openssl rand -hex 32`", ErrKey)
	}
	var key []byte
	if b, err := hex.DecodeString(s); err == nil {
		key = b
	} else {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil {
				key = b
				break
			}
		}
	}
	if key == nil {
		return nil, fmt.Errorf("%w: it is neither hexadecimal nor base64 (%d characters); generate one with `openssl rand -hex 32`", ErrKey, len(s))
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%w: it decodes to %d bytes; use at least %d random bytes, e.g. `openssl rand -hex 32`", ErrKey, len(key), MinKeyBytes)
	}
	return key, nil
}
