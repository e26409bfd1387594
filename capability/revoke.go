package capability

// Revocation, locally and across nodes: Revoke and RevokeHolder (a
// process's) and RevokeToken and RevokeIssuedTo (an operator's, durable)
// kill tokens here and report each revocation to the subscribers (who
// publish it to the other nodes); Apply takes in what another node
// published; Revoked is the whole list, for a node that joins or missed
// messages; the Store keeps the durable ones across restarts.

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

// Revocation says that a token and every token derived from it is dead:
// the token with ID, or (Holder set) every token issued to Holder until At.
// Tokens carry the ids, holders and issue times of their ancestors
// (Token.Chain, Holders, IssuedChain), so a node that applies the
// revocation of a token it never saw still refuses every token derived from
// it, including tokens derived on a third node.
type Revocation struct {
	// ID is the revoked token's id ("" in a holder's revocation).
	ID string
	// Holder, when set, revokes every token issued to Holder until At (by
	// any node sharing the key), and what was derived from them; a token
	// issued to Holder after At is not revoked. A holder's revocation is
	// always Durable.
	Holder string
	// At is when it was revoked, on the revoking node's clock (a
	// revocation never expires; a holder's revocation compares it with
	// Token.Issued: keep the nodes' clocks synchronised).
	At time.Time
	// Durable marks an operator's revocation (RevokeToken, RevokeIssuedTo):
	// kept in the Authority's Store, so it outlives the node. A process's
	// revocation (Revoke, RevokeHolder when it exits) is not.
	Durable bool
	// Sig is HMAC-SHA256, under the signing key, of what is revoked, At and
	// Durable: Apply refuses a revocation whose Sig does not match, so only
	// a node holding the key can revoke.
	Sig []byte
}

// revoked is one id's revocation as an Authority keeps it.
type revoked struct {
	at      int64 // Unix ns, the revoking node's clock
	durable bool
}

// revocationMAC is the signature of a revocation (at: Unix ns). A
// process's revocation of an id is signed as before durable revocations
// existed, so that nodes of both versions understand each other.
func (a *Authority) revocationMAC(id, holder string, at int64, durable bool) []byte {
	m := hmac.New(sha256.New, a.key)
	switch {
	case holder == "" && !durable:
		m.Write([]byte("agentos capability revocation\x00"))
		m.Write([]byte(id))
	case holder == "":
		m.Write([]byte("agentos capability revocation v2\x00id\x00"))
		m.Write([]byte(id))
	default:
		m.Write([]byte("agentos capability revocation v2\x00holder\x00"))
		m.Write([]byte(holder))
	}
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(at, 10)))
	return m.Sum(nil)
}

func (a *Authority) revocation(id string, r revoked) Revocation {
	return Revocation{ID: id, At: time.Unix(0, r.at).UTC(), Durable: r.durable, Sig: a.revocationMAC(id, "", r.at, r.durable)}
}

func (a *Authority) holderRevocation(holder string, at int64) Revocation {
	return Revocation{Holder: holder, At: time.Unix(0, at).UTC(), Durable: true, Sig: a.revocationMAC("", holder, at, true)}
}

// Revoke kills the token with id and, transitively, every token derived
// from it, on this node at once; the subscribers (Subscribe) are told, so
// that the other nodes apply it too. Revoking a revoked id again does
// nothing (and tells no one). It is a process's revocation: not stored
// (RevokeToken is the operator's, which is).
func (a *Authority) Revoke(id string) {
	a.mu.Lock()
	r, fresh := a.revokeLocked(id, false)
	subs := a.subscribers()
	a.mu.Unlock()
	if fresh {
		notify(subs, r)
	}
}

// RevokeHolder kills every token issued to holder by this Authority (and
// what was derived from them, wherever): call it when a process exits. The
// subscribers are told of every id, one Revocation each. Tokens of holder
// that another Authority issued are not touched: RevokeIssuedTo is the
// operator's revocation of a holder everywhere.
func (a *Authority) RevokeHolder(holder string) {
	a.mu.Lock()
	var out []Revocation
	for _, id := range a.byHolder[holder] {
		if r, fresh := a.revokeLocked(id, false); fresh {
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

// RevokeToken is the operator's revocation of the token with id (any token
// signed with this Authority's key, wherever it was minted) and,
// transitively, of every token derived from it: in force here at once,
// kept in the Store (it outlives the node) and told to the subscribers (the
// other nodes). An id that is not 24 hexadecimal digits is refused
// (ErrInvalid). Revoking an id revoked before makes it durable if it was
// not (a process's revocation) and is otherwise a no-op that returns the
// revocation in force. The error of a Store that failed says the
// revocation is in force but will not outlive the node.
func (a *Authority) RevokeToken(id string) (Revocation, error) {
	if !IsTokenID(id) {
		return Revocation{}, fmt.Errorf("%w: %q is not a token id: an id is 24 hexadecimal digits ('agentos token' prints it; 'agentos token list' lists the ones minted in a tool root)", ErrInvalid, clipID(id))
	}
	a.mu.Lock()
	r, fresh := a.revokeLocked(id, true)
	if !fresh {
		r = a.revocation(id, a.revoked[id])
	}
	subs := a.subscribers()
	a.mu.Unlock()
	if !fresh {
		return r, nil
	}
	err := a.save([]Revocation{r})
	notify(subs, r)
	return r, err
}

// RevokeIssuedTo is the operator's revocation of every token issued to
// holder until now, by any node sharing the key, and of every token
// derived from one (whoever holds it): in force here at once, kept in the
// Store and told to the subscribers. Tokens issued to holder afterwards
// are valid (mint the holder a new one). An empty or overlong holder is
// refused (ErrInvalid).
func (a *Authority) RevokeIssuedTo(holder string) (Revocation, error) {
	if holder == "" || len(holder) > maxIDLen {
		return Revocation{}, fmt.Errorf("%w: a holder's revocation needs the holder's name, 1 to %d bytes (got %d)", ErrInvalid, maxIDLen, len(holder))
	}
	a.mu.Lock()
	at := a.now().UnixNano()
	if prev, ok := a.holders[holder]; ok && prev >= at {
		at = prev
	}
	a.holders[holder] = at
	r := a.holderRevocation(holder, at)
	subs := a.subscribers()
	a.mu.Unlock()
	err := a.save([]Revocation{r})
	notify(subs, r)
	return r, err
}

// IsTokenID reports whether s has the form of a token id (24 lower-case
// hexadecimal digits).
func IsTokenID(s string) bool {
	if len(s) != 24 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Issued reports whether this Authority issued the token with id to a
// holder whose tokens it has not revoked as a whole (RevokeHolder): the
// tokens of this process's live holders.
func (a *Authority) Issued(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ids := range a.byHolder {
		if slices.Contains(ids, id) {
			return true
		}
	}
	return false
}

// HasHolder reports whether this Authority issued tokens to holder that
// RevokeHolder has not ended.
func (a *Authority) HasHolder(holder string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byHolder[holder]) > 0
}

// revokeLocked records id as revoked now; fresh is false when it already
// was, unless durable upgrades a process's revocation. Called with a.mu
// held.
func (a *Authority) revokeLocked(id string, durable bool) (r Revocation, fresh bool) {
	if prev, dead := a.revoked[id]; dead && (prev.durable || !durable) {
		return Revocation{}, false
	}
	e := revoked{at: a.now().UnixNano(), durable: durable}
	a.revoked[id] = e
	delete(a.uses, id)
	return a.revocation(id, e), true
}

// holderRevoked returns ErrRevoked when t, or an ancestor of t, was issued
// to a revoked holder before the holder's revocation. Called with a.mu
// held.
func (a *Authority) holderRevoked(t Token) error {
	if len(a.holders) == 0 {
		return nil
	}
	if at, dead := a.holders[t.Holder]; dead && t.Issued <= at {
		return fmt.Errorf("%w: token %s (every token issued to %s until %s was revoked)", ErrRevoked, t.ID, t.Holder, time.Unix(0, at).UTC().Format(time.RFC3339))
	}
	for i, h := range t.Holders {
		at, dead := a.holders[h]
		if !dead {
			continue
		}
		var issued int64 // unknown: issued before the revocation
		if i < len(t.IssuedChain) {
			issued = t.IssuedChain[i]
		}
		if issued <= at {
			return fmt.Errorf("%w: token %s (derived from a token of %s, whose tokens until %s were revoked)", ErrRevoked, t.ID, h, time.Unix(0, at).UTC().Format(time.RFC3339))
		}
	}
	return nil
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
		f(r.clone())
	}
}

func (r Revocation) clone() Revocation {
	r.Sig = slices.Clone(r.Sig)
	return r
}

// Subscribe has fn called with every revocation this Authority makes
// (Revoke, RevokeHolder, RevokeToken, RevokeIssuedTo), after it took
// effect here, on the goroutine that revoked, in subscription order; never
// for what Apply takes in (so that nodes do not echo each other). It
// returns the function that ends the subscription.
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
// each kills its token (or its holder's tokens) and every token derived
// from it, here, at once; the durable ones are then kept in the Store. It
// is idempotent: what is already revoked is skipped. It returns how many
// were new. A revocation with an empty or overlong ID or Holder, or whose
// Sig was not made under this Authority's key, is refused (ErrInvalid,
// joined for all of them) and the others are still applied; a Store that
// failed is reported too (the revocations are in force regardless). Apply
// never tells the subscribers.
func (a *Authority) Apply(rs ...Revocation) (applied int, err error) {
	var errs []error
	var durable []Revocation
	a.mu.Lock()
	for _, r := range rs {
		fresh, err := a.applyLocked(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if fresh {
			applied++
			if r.Durable || r.Holder != "" {
				durable = append(durable, r.clone())
			}
		}
	}
	a.mu.Unlock()
	if err := a.save(durable); err != nil {
		errs = append(errs, err)
	}
	return applied, errors.Join(errs...)
}

// applyLocked applies one revocation; fresh is false when it was in force
// already. Called with a.mu held.
func (a *Authority) applyLocked(r Revocation) (fresh bool, err error) {
	name, what := r.ID, "token"
	if r.Holder != "" {
		name, what = r.Holder, "holder"
		r.Durable = true
	}
	if name == "" || len(name) > maxIDLen || (r.ID != "" && r.Holder != "") {
		return false, fmt.Errorf("%w: a revocation needs the id of a token or the name of a holder, up to %d bytes (got id %d bytes, holder %d bytes)", ErrInvalid, maxIDLen, len(r.ID), len(r.Holder))
	}
	at := r.At.UnixNano()
	if !hmac.Equal(r.Sig, a.revocationMAC(r.ID, r.Holder, at, r.Durable)) {
		return false, fmt.Errorf("%w: the revocation of %s %s is not signed with this node's key (another cluster's, or forged): check that every node's capability.signing_key_env holds the same key", ErrInvalid, what, clipID(name))
	}
	if r.Holder != "" {
		if prev, ok := a.holders[r.Holder]; ok && prev >= at {
			return false, nil
		}
		a.holders[r.Holder] = at
		return true, nil
	}
	if prev, dead := a.revoked[r.ID]; dead && (prev.durable || !r.Durable) {
		return false, nil
	}
	a.revoked[r.ID] = revoked{at: at, durable: r.Durable}
	delete(a.uses, r.ID)
	return true, nil
}

// save keeps durable revocations in the Store (nothing without one).
func (a *Authority) save(rs []Revocation) error {
	if a.store == nil || len(rs) == 0 {
		return nil
	}
	if err := a.store.Save(rs); err != nil {
		return fmt.Errorf("capability: the revocation is in force on this node but was not stored, so it will not outlive the node: %w", err)
	}
	return nil
}

// load applies what store holds (New). A stored revocation signed with
// another key (the key was changed) is skipped: the tokens it revoked do
// not verify under this key anyway.
func (a *Authority) load(store RevocationStore) error {
	if store == nil {
		return nil
	}
	rs, err := store.Load()
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range rs {
		_, _ = a.applyLocked(r)
	}
	a.store = store
	return nil
}

func clipID(id string) string {
	if len(id) > 32 {
		return id[:32] + "..."
	}
	return id
}

// Revoked returns every revocation this Authority knows (made here or
// applied; of ids and of holders), oldest first: what a node that joins
// the cluster, or that missed messages, passes to its own Apply.
func (a *Authority) Revoked() []Revocation {
	a.mu.Lock()
	out := make([]Revocation, 0, len(a.revoked)+len(a.holders))
	for id, r := range a.revoked {
		out = append(out, a.revocation(id, r))
	}
	for h, at := range a.holders {
		out = append(out, a.holderRevocation(h, at))
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y Revocation) int {
		if c := x.At.Compare(y.At); c != 0 {
			return c
		}
		if c := strings.Compare(x.ID, y.ID); c != 0 {
			return c
		}
		return strings.Compare(x.Holder, y.Holder)
	})
	return out
}

// Proto returns r as its wire message (capabilitypb.Revocation).
func (r Revocation) Proto() *capabilitypb.Revocation {
	return &capabilitypb.Revocation{Id: r.ID, Holder: r.Holder, AtUnixNano: r.At.UnixNano(), Durable: r.Durable, Sig: slices.Clone(r.Sig)}
}

// RevocationFromProto returns the Revocation of a wire message (nil: the
// zero Revocation, which Apply refuses).
func RevocationFromProto(p *capabilitypb.Revocation) Revocation {
	if p == nil {
		return Revocation{}
	}
	return Revocation{ID: p.GetId(), Holder: p.GetHolder(), At: time.Unix(0, p.GetAtUnixNano()).UTC(), Durable: p.GetDurable(), Sig: slices.Clone(p.GetSig())}
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
