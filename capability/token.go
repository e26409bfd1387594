package capability

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/internal/clip"
)

// Right is one kind of privileged action.
type Right string

// The rights the kernel checks.
const (
	Read  Right = "read"  // read a tool path
	Write Right = "write" // write or patch a tool path
	Exec  Right = "exec"  // run a tool
	Spawn Right = "spawn" // start a child process
	SQL   Right = "sql"   // use the sql driver
	Fetch Right = "fetch" // use the fetch driver (scope: URL prefix)
	LLM   Right = "llm"   // use the llm driver
	MCP   Right = "mcp"   // call an MCP server's tool (scope: "server/tool"; "server/" covers its tools)
	// MemoryRead is reading another agent's long-term memory (scope: the
	// agent's name; "" every agent's). An agent always reads and writes
	// its own memory; it never writes another's.
	MemoryRead Right = "memory_read"
	// Approve is approving a version of a tool at the approval gate for
	// every caller (scope: the tool's path, "tools/" a directory): what an
	// MCP client's confirmation records. Without it a confirmation lets
	// only the confirmed run go. Not in the default grants.
	Approve Right = "approve"
)

// Rights lists every right, in a stable order: what a configuration or a
// command line that names rights accepts. IMPORTANT: a right added above
// MUST be added here.
func Rights() []Right {
	return []Right{Read, Write, Exec, Spawn, SQL, Fetch, LLM, MCP, MemoryRead, Approve}
}

// Grant is a right on every resource that starts with Scope ("" means any).
// A path scope ending in "/" covers that directory; without it, it covers
// exactly that resource and the directory of that name ("tools/a" covers
// tools/a and tools/a/x, not tools/ab).
type Grant struct {
	Right Right  `json:"right"`
	Scope string `json:"scope,omitempty"`
}

// covers reports whether g grants r on resource.
func (g Grant) covers(r Right, resource string) bool {
	return g.Right == r && scopeCovers(g.Scope, resource)
}

// GrantsCover reports whether any of grants gives r on resource: the check a
// token's grants make, for grants kept without their token (a journaled
// run's caller, see journal.Caller).
func GrantsCover(grants []Grant, r Right, resource string) bool {
	for _, g := range grants {
		if g.covers(r, resource) {
			return true
		}
	}
	return false
}

// Reaches reports whether g gives r on resource or on something under it
// ("resource/..."): a grant on every resource (scope ""), on resource
// itself, or on a resource below it. It answers "may the holder see this
// directory at all" (an MCP server whose tools it may call) where Covers
// answers for one resource.
func (g Grant) Reaches(r Right, resource string) bool {
	return g.Right == r && (g.Scope == "" || g.Scope == resource || strings.HasPrefix(g.Scope, resource+"/"))
}

func scopeCovers(scope, resource string) bool {
	switch {
	case scope == "":
		return true
	case strings.HasSuffix(scope, "/"):
		return strings.HasPrefix(resource, scope)
	default:
		return resource == scope || strings.HasPrefix(resource, scope+"/")
	}
}

// Caveats restrict a token further.
type Caveats struct {
	// NotAfter is when the token expires, on the Authority's clock.
	NotAfter time.Time `json:"not_after,omitzero"`
	// MaxUses bounds how many checks the token passes (0: unbounded).
	MaxUses int `json:"max_uses,omitempty"`
}

// Token is a signed capability. Treat it as a value: any change breaks its
// signature.
type Token struct {
	ID      string    `json:"id"`
	Chain   []string  `json:"chain,omitempty"` // ancestors' ids, root first
	Holder  string    `json:"holder"`
	Grants  []Grant   `json:"grants"`
	Caveats []Caveats `json:"caveats,omitempty"` // every ancestor's, then its own
	// Issued is when it was issued (Unix ns, the issuing node's clock): a
	// holder's revocation (RevokeIssuedTo) kills the tokens issued to it
	// until then. 0 in tokens older than holder revocations: any holder
	// revocation of their holder kills them.
	Issued int64 `json:"iat,omitempty"`
	// Holders and IssuedChain are the ancestors' holders and Issued, root
	// first (as Chain): a holder's revocation kills what was derived from
	// its tokens, whoever holds it.
	Holders     []string `json:"holders,omitempty"`
	IssuedChain []int64  `json:"chain_iat,omitempty"`
	Sig         []byte   `json:"sig"`
}

// Encode returns the token as a string to hand to another process or node.
func (t Token) Encode() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode parses a string made by Encode. It does not verify the token.
// A string decoded recently is answered from a bounded memo (decoded): a
// process hands the same token with every call (exec_tool decoded it twice
// per run, about 45 µs of JSON each); each answer is a copy, so a caller
// that changes its token changes no other caller's.
func Decode(s string) (Token, error) {
	if t, ok := decoded.get(s); ok {
		return t.clone(), nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Token{}, fmt.Errorf("%w: not an encoded token", ErrInvalid)
	}
	var t Token
	if err := json.Unmarshal(b, &t); err != nil {
		return Token{}, fmt.Errorf("%w: not an encoded token", ErrInvalid)
	}
	decoded.put(s, t)
	return t.clone(), nil
}

// memoSize bounds each memo of encoded tokens (their decodings, their good
// signatures): at that many it starts again empty (a node holds a few
// tokens per process; a flood of distinct tokens costs what it cost
// without the memo).
const memoSize = 256

// memo maps encoded tokens to what was found of them (a function of the
// string alone, or of the string and a key that never changes), so an
// entry never goes stale. Safe for concurrent use.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// decoded maps encoded tokens to their decoding. Its Tokens MUST NOT be
// changed: Decode hands out copies only.
var decoded memo[Token]

func (d *memo[V]) get(s string) (V, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[s]
	return v, ok
}

func (d *memo[V]) put(s string, v V) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= memoSize {
		d.m = make(map[string]V, memoSize)
	}
	d.m[s] = v
}

// Errors of token checks. Test with errors.Is; the messages say which
// right, resource and token were involved.
var (
	ErrInvalid = errors.New("invalid capability token")             // forged, edited or malformed
	ErrRevoked = errors.New("capability revoked")                   // it or an ancestor was revoked
	ErrExpired = errors.New("capability expired")                   // past a NotAfter caveat
	ErrUsedUp  = errors.New("capability used up")                   // past a MaxUses caveat
	ErrDenied  = errors.New("capability does not grant this right") // no grant covers the request
	ErrAmplify = errors.New("attenuation cannot add rights")        // Attenuate asked for more
	ErrKey     = errors.New("bad capability signing key")           // too short, or not hex or base64 (ParseKey, New)
)

// Authority issues and checks tokens. It is safe for concurrent use.
//
// IMPORTANT (clusters): every node's Authority MUST be built with the same
// key (Options.Key) for a token minted on one node to verify on another,
// and the nodes MUST exchange revocations: publish what Subscribe (or
// Options.OnRevoke) reports, feed what other nodes publish to Apply, and
// have a joining node Apply another node's Revoked. Use counts
// (Caveats.MaxUses) are NOT shared: a token with MaxUses n passes up to n
// checks on EACH node.
type Authority struct {
	key []byte
	now func() time.Time

	mu       sync.Mutex
	revoked  map[string]revoked // id -> its revocation
	holders  map[string]int64   // holder -> tokens issued to it until then (Unix ns) are revoked
	store    RevocationStore
	uses     map[string]int
	byHolder map[string][]string // holder -> ids issued to it
	subs     map[int]func(Revocation)
	nextSub  int

	signed memo[struct{}] // encoded tokens whose signature this Authority found good
}

// Options configure an Authority. The zero value is a fresh random key,
// valid for this process only, and time.Now.
type Options struct {
	// Key signs and verifies tokens: at least 32 random bytes (see
	// ParseKey). nil: a fresh random key, so tokens verify only in this
	// process. IMPORTANT: the nodes of a cluster MUST share one key.
	Key []byte
	// Now is the clock expiry caveats are checked against (nil: time.Now).
	Now func() time.Time
	// OnRevoke, when set, is subscribed at once (see Subscribe).
	OnRevoke func(Revocation)
	// Store, when set, keeps the durable revocations (RevokeToken,
	// RevokeIssuedTo, and the durable ones Apply takes in): New applies
	// what it holds, so they outlive the process. nil: in memory only.
	Store RevocationStore
}

// NewAuthority returns an Authority signing with key (at least 32 bytes; nil
// means a fresh random key, valid for this process only) and reading time
// from now (nil means time.Now). It is New(Options{Key: key, Now: now}).
func NewAuthority(key []byte, now func() time.Time) (*Authority, error) {
	return New(Options{Key: key, Now: now})
}

// New returns an Authority configured by opts. A key shorter than 32 bytes
// is refused (ErrKey).
func New(opts Options) (*Authority, error) {
	key := opts.Key
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%w: it has %d bytes; use at least %d random bytes (e.g. the output of `openssl rand -hex 32`)", ErrKey, len(key), MinKeyBytes)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	a := &Authority{key: slices.Clone(key), now: now, revoked: map[string]revoked{}, holders: map[string]int64{}, uses: map[string]int{}, byHolder: map[string][]string{}, subs: map[int]func(Revocation){}}
	if err := a.load(opts.Store); err != nil {
		return nil, err
	}
	if opts.OnRevoke != nil {
		a.Subscribe(opts.OnRevoke)
	}
	return a, nil
}

func (a *Authority) sign(t *Token) {
	t.Sig = nil
	b, _ := json.Marshal(t)
	m := hmac.New(sha256.New, a.key)
	m.Write(b)
	t.Sig = m.Sum(nil)
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (a *Authority) issue(t Token) Token {
	t.ID = newID()
	t.Issued = a.now().UnixNano()
	a.sign(&t)
	a.mu.Lock()
	a.byHolder[t.Holder] = append(a.byHolder[t.Holder], t.ID)
	a.mu.Unlock()
	return t
}

// Mint issues a root token: only the kernel, which owns the Authority, can.
func (a *Authority) Mint(holder string, grants []Grant, c Caveats) Token {
	t := Token{Holder: holder, Grants: slices.Clone(grants)}
	if c != (Caveats{}) {
		t.Caveats = []Caveats{c}
	}
	return a.issue(t)
}

// Attenuate derives from parent a token for the same holder with grants
// (each covered by one of parent's) and the added caveats. The parent's
// caveats are kept. It fails with ErrAmplify if a grant is not covered.
func (a *Authority) Attenuate(parent Token, grants []Grant, c Caveats) (Token, error) {
	return a.derive(parent, parent.Holder, grants, c)
}

// Delegate derives from parent a token for another holder, with the same
// grants or fewer (nil: the same) and the added caveats.
func (a *Authority) Delegate(parent Token, to string, grants []Grant, c Caveats) (Token, error) {
	if grants == nil {
		grants = parent.Grants
	}
	return a.derive(parent, to, grants, c)
}

func (a *Authority) derive(parent Token, holder string, grants []Grant, c Caveats) (Token, error) {
	if err := a.live(parent); err != nil {
		return Token{}, err
	}
	for _, g := range grants {
		if !slices.ContainsFunc(parent.Grants, func(p Grant) bool {
			return p.Right == g.Right && scopeCovers(p.Scope, g.Scope) && (p.Scope == "" || g.Scope != "")
		}) {
			return Token{}, fmt.Errorf("%w: %s on %q is not granted by token %s", ErrAmplify, g.Right, orAny(g.Scope), parent.ID)
		}
	}
	t := Token{
		Chain: append(slices.Clone(parent.Chain), parent.ID), Holder: holder, Grants: slices.Clone(grants), Caveats: slices.Clone(parent.Caveats),
		Holders: append(slices.Clone(parent.Holders), parent.Holder), IssuedChain: append(slices.Clone(parent.IssuedChain), parent.Issued),
	}
	if c != (Caveats{}) {
		t.Caveats = append(t.Caveats, c)
	}
	return a.issue(t), nil
}

func orAny(scope string) string {
	if scope == "" {
		return "anything"
	}
	return scope
}

// Verify checks that t was issued by this Authority (or one sharing its key)
// and is unchanged, not revoked and not expired. It consumes no use.
func (a *Authority) Verify(t Token) error { return a.live(t) }

func (a *Authority) live(t Token) error {
	sig := t.Sig
	a.sign(&t)
	if !hmac.Equal(sig, t.Sig) {
		return fmt.Errorf("%w: its signature does not match (forged or edited)", ErrInvalid)
	}
	return a.state(t)
}

// state checks revocation and expiry, not the signature.
func (a *Authority) state(t Token) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range t.Chain {
		if _, dead := a.revoked[id]; dead {
			return fmt.Errorf("%w: token %s (revoked: %s)", ErrRevoked, t.ID, id)
		}
	}
	if _, dead := a.revoked[t.ID]; dead {
		return fmt.Errorf("%w: token %s (revoked: %s)", ErrRevoked, t.ID, t.ID)
	}
	if err := a.holderRevoked(t); err != nil {
		return err
	}
	var now time.Time
	for _, c := range t.Caveats {
		if c.NotAfter.IsZero() {
			continue
		}
		if now.IsZero() {
			now = a.now()
		}
		if now.After(c.NotAfter) {
			return fmt.Errorf("%w: token %s expired at %s", ErrExpired, t.ID, c.NotAfter.Format(time.RFC3339))
		}
	}
	return nil
}

// Check verifies t for holder and consumes one use: it succeeds only if a
// grant covers right on resource. A refusal says which right was missing.
func (a *Authority) Check(t Token, holder string, right Right, resource string) error {
	if err := a.live(t); err != nil {
		return err
	}
	return a.checkLive(t, holder, right, resource)
}

// checkLive is Check after the token was verified.
func (a *Authority) checkLive(t Token, holder string, right Right, resource string) error {
	if t.Holder != holder {
		return fmt.Errorf("%w: token %s is held by %s, not %s (delegate it first)", ErrDenied, t.ID, t.Holder, holder)
	}
	if !slices.ContainsFunc(t.Grants, func(g Grant) bool { return g.covers(right, resource) }) {
		return fmt.Errorf("%w: %s lacks the %q right on %q (token %s grants %s)", ErrDenied, holder, right, clip.Text(resource), t.ID, describe(t.Grants))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range t.Caveats {
		if c.MaxUses > 0 && a.uses[t.ID] >= c.MaxUses {
			return fmt.Errorf("%w: token %s allowed %d uses", ErrUsedUp, t.ID, c.MaxUses)
		}
	}
	a.uses[t.ID]++
	return nil
}

// Held is a token its Authority verified once, kept in memory the holder's
// keeper owns (the kernel's process table). Only Hold makes one, so checking
// it skips the signature (the expensive part of Check) and nothing else:
// revocation, expiry and use counts are checked every time.
type Held struct {
	a   *Authority
	t   Token
	enc func() string // t encoded, once: a held token never changes
}

// Hold verifies t and returns it held. IMPORTANT: hand out Held values only
// to code as trusted as the Authority itself; give processes Tokens.
func (a *Authority) Hold(t Token) (*Held, error) {
	if err := a.live(t); err != nil {
		return nil, err
	}
	h := &Held{a: a, t: t.clone()}
	h.enc = sync.OnceValue(h.t.Encode)
	return h, nil
}

// HoldEncoded is Hold(Decode(s)) for a token as a process hands it on
// (Token.Encode). A string whose signature this Authority found good
// recently is not signed again: the signature is a function of the string
// and the key, and the key never changes (exec_tool held its caller's
// token on every run, about 16 µs of JSON and HMAC). IMPORTANT:
// revocation and expiry are checked on every call, as Hold does; only a
// good signature is remembered, so a forged or edited string is checked,
// and refused, every time.
func (a *Authority) HoldEncoded(s string) (*Held, error) {
	t, err := Decode(s)
	if err != nil {
		return nil, err
	}
	if _, ok := a.signed.get(s); !ok {
		if err := a.live(t); err != nil {
			return nil, err
		}
		a.signed.put(s, struct{}{})
	} else if err := a.state(t); err != nil {
		return nil, err
	}
	h := &Held{a: a, t: t}
	h.enc = sync.OnceValue(h.t.Encode)
	return h, nil
}

// Token returns a copy of the held token.
func (h *Held) Token() Token { return h.t.clone() }

// Encoded returns the held token encoded (Token.Encode), encoded once: a
// process hands its token on with every run.
func (h *Held) Encoded() string { return h.enc() }

// Check is Authority.Check without re-verifying the signature.
func (h *Held) Check(holder string, right Right, resource string) error {
	if err := h.a.state(h.t); err != nil {
		return err
	}
	return h.a.checkLive(h.t, holder, right, resource)
}

// Covers reports whether the held token, live, grants right on resource,
// without consuming a use: for filtering what a holder may see (search
// results), never for authorizing an action.
func (h *Held) Covers(right Right, resource string) bool {
	if h.a.state(h.t) != nil {
		return false
	}
	return slices.ContainsFunc(h.t.Grants, func(g Grant) bool { return g.covers(right, resource) })
}

// clone returns t with its own copy of every slice (nil stays nil).
func (t Token) clone() Token {
	t.Chain = slices.Clone(t.Chain)
	t.Grants = slices.Clone(t.Grants)
	t.Caveats = slices.Clone(t.Caveats)
	t.Holders = slices.Clone(t.Holders)
	t.IssuedChain = slices.Clone(t.IssuedChain)
	t.Sig = slices.Clone(t.Sig)
	return t
}

func describe(gs []Grant) string {
	if len(gs) == 0 {
		return "nothing"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = string(g.Right) + " on " + orAny(g.Scope)
	}
	return strings.Join(parts, ", ")
}
