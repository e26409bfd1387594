package capability

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentos-run/agentos/capability/capabilitypb"
)

var sharedKey = []byte("0123456789abcdef0123456789abcdef")

// node is one node's Authority with the revocations it published.
type node struct {
	a   *Authority
	mu  sync.Mutex
	out []Revocation
}

func newNode(t *testing.T, key []byte, now func() time.Time) *node {
	t.Helper()
	n := &node{}
	a, err := New(Options{Key: key, Now: now, OnRevoke: func(r Revocation) {
		n.mu.Lock()
		n.out = append(n.out, r)
		n.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	n.a = a
	return n
}

// publish delivers what n published since the last call to every peer, as
// the cluster would: marshalled to protobuf and back.
func (n *node) publish(t *testing.T, peers ...*node) {
	t.Helper()
	n.mu.Lock()
	out := n.out
	n.out = nil
	n.mu.Unlock()
	for _, r := range out {
		b, err := proto.Marshal(r.Proto())
		if err != nil {
			t.Fatal(err)
		}
		var p capabilitypb.Revocation
		if err := proto.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		for _, peer := range peers {
			if _, err := peer.a.Apply(RevocationFromProto(&p)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestTokenMintedOnOneNodeVerifiesOnAnother(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	a, b := newNode(t, sharedKey, c.now), newNode(t, sharedKey, c.now)
	tok := a.a.Mint("p1", []Grant{{Read, "tools/"}, {Exec, "tools/"}}, Caveats{NotAfter: c.t.Add(time.Hour)})
	wire, err := Decode(tok.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.a.Check(wire, "p1", Read, "tools/x.ts"); err != nil {
		t.Fatalf("node B refuses node A's token: %v", err)
	}
	// B derives from A's token; A verifies B's child.
	child, err := b.a.Delegate(wire, "p2", []Grant{{Read, "tools/math/"}}, Caveats{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.a.Check(child, "p2", Read, "tools/math/fib.ts"); err != nil {
		t.Fatalf("node A refuses node B's child token: %v", err)
	}

	// A node with another key accepts none of them.
	other := newNode(t, []byte("another key, 32 bytes long......"), c.now)
	for _, x := range []Token{tok, child} {
		if err := other.a.Verify(x); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a node with another key: %v, want ErrInvalid", err)
		}
	}
}

func TestEveryNodeRefusesForgedAmplifiedExpiredRevoked(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	a, b := newNode(t, sharedKey, c.now), newNode(t, sharedKey, c.now)
	nodes := []*node{a, b}
	tok := a.a.Mint("p1", []Grant{{Read, "tools/"}}, Caveats{})

	forged := tok.clone()
	forged.Grants = append(forged.Grants, Grant{Write, ""})
	resigned := forged.clone() // signed with another key
	evil, _ := New(Options{Key: []byte("not the cluster's key, 32 bytes!")})
	evil.sign(&resigned)
	for _, n := range nodes {
		for name, x := range map[string]Token{"edited": forged, "signed with another key": resigned} {
			if err := n.a.Check(x, "p1", Write, "tools/x.ts"); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s token: %v, want ErrInvalid", name, err)
			}
		}
		// Amplification: no node derives more than the parent grants.
		for _, g := range []Grant{{Write, "tools/"}, {Read, ""}, {Read, "secrets/"}} {
			if _, err := n.a.Attenuate(tok, []Grant{g}, Caveats{}); !errors.Is(err, ErrAmplify) {
				t.Errorf("attenuate to %v: %v, want ErrAmplify", g, err)
			}
			if _, err := n.a.Delegate(tok, "p2", []Grant{g}, Caveats{}); !errors.Is(err, ErrAmplify) {
				t.Errorf("delegate %v: %v, want ErrAmplify", g, err)
			}
		}
	}

	short := b.a.Mint("p1", []Grant{{Read, "tools/"}}, Caveats{NotAfter: c.t.Add(time.Minute)})
	c.t = c.t.Add(2 * time.Minute)
	for _, n := range nodes {
		if err := n.a.Check(short, "p1", Read, "tools/x.ts"); !errors.Is(err, ErrExpired) {
			t.Errorf("expired: %v, want ErrExpired", err)
		}
	}

	a.a.Revoke(tok.ID)
	if err := b.a.Check(tok, "p1", Read, "tools/x.ts"); err != nil {
		t.Fatalf("before the revocation reached node B it still accepts (documented): %v", err)
	}
	a.publish(t, b)
	for _, n := range nodes {
		if err := n.a.Check(tok, "p1", Read, "tools/x.ts"); !errors.Is(err, ErrRevoked) {
			t.Errorf("revoked: %v, want ErrRevoked", err)
		}
		if _, err := n.a.Delegate(tok, "p2", nil, Caveats{}); !errors.Is(err, ErrRevoked) {
			t.Errorf("deriving from a revoked token: %v, want ErrRevoked", err)
		}
	}
}

// A revocation applied on a node kills the tokens derived from the revoked
// one, also those derived on a third node that neither the revoking node
// nor the receiving node ever saw.
func TestAppliedRevocationKillsDescendantsNeverSeen(t *testing.T) {
	a, b, c := newNode(t, sharedKey, nil), newNode(t, sharedKey, nil), newNode(t, sharedKey, nil)
	root := a.a.Mint("p1", []Grant{{Read, "tools/"}}, Caveats{})
	child, err := c.a.Delegate(root, "p2", nil, Caveats{}) // made on C
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := c.a.Attenuate(child, []Grant{{Read, "tools/a/"}}, Caveats{MaxUses: 3})
	if err != nil {
		t.Fatal(err)
	}
	a.a.Revoke(root.ID)
	a.publish(t, b, c)
	for i, n := range []*node{a, b, c} {
		for _, x := range []Token{child, grandchild} {
			if err := n.a.Verify(x); !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), root.ID) {
				t.Errorf("node %d, token %s: %v, want ErrRevoked naming %s", i, x.ID, err, root.ID)
			}
		}
	}
}

func TestApplyIsIdempotentSignedAndSilent(t *testing.T) {
	a, b := newNode(t, sharedKey, nil), newNode(t, sharedKey, nil)
	t1 := a.a.Mint("p1", []Grant{{Read, ""}}, Caveats{})
	t2 := a.a.Mint("p1", []Grant{{Exec, ""}}, Caveats{})
	a.a.Revoke(t1.ID)
	a.a.Revoke(t1.ID) // again: nothing new to tell
	a.a.RevokeHolder("p1")
	a.mu.Lock()
	got := len(a.out)
	a.mu.Unlock()
	if got != 2 {
		t.Fatalf("node A published %d revocations, want 2 (t1 once, t2 by RevokeHolder)", got)
	}
	snap := a.a.Revoked()
	if len(snap) != 2 {
		t.Fatalf("Revoked: %d, want 2", len(snap))
	}
	for range 3 {
		n, err := b.a.Apply(snap...)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 && n != 2 {
			t.Fatalf("applied %d", n)
		}
	}
	if n, _ := b.a.Apply(snap...); n != 0 {
		t.Fatalf("applying again: %d new, want 0", n)
	}
	for _, x := range []Token{t1, t2} {
		if err := b.a.Verify(x); !errors.Is(err, ErrRevoked) {
			t.Fatalf("%s on B: %v", x.ID, err)
		}
	}
	b.mu.Lock()
	echoed := len(b.out)
	b.mu.Unlock()
	if echoed != 0 {
		t.Fatalf("node B re-published %d applied revocations: nodes would echo each other", echoed)
	}
	// The snapshot survives the wire.
	wire, err := proto.Marshal(RevocationsProto(snap))
	if err != nil {
		t.Fatal(err)
	}
	var p capabilitypb.Revocations
	if err := proto.Unmarshal(wire, &p); err != nil {
		t.Fatal(err)
	}
	fresh := newNode(t, sharedKey, nil)
	if n, err := fresh.a.Apply(RevocationsFromProto(&p)...); n != 2 || err != nil {
		t.Fatalf("a joining node applied %d, %v; want 2, nil", n, err)
	}

	// Forged, foreign or malformed revocations are refused; the good one
	// beside them still applies.
	t3 := a.a.Mint("p3", []Grant{{Read, ""}}, Caveats{})
	foreign := newNode(t, []byte("another cluster's key, 32 bytes."), nil)
	foreign.a.Revoke(t3.ID)
	bad := []Revocation{foreign.a.Revoked()[0], {ID: t3.ID, At: time.Now()}, {}, {ID: strings.Repeat("x", 200)}}
	edited := snap[0]
	edited.ID = t3.ID
	bad = append(bad, edited)
	t4 := a.a.Mint("p4", []Grant{{Read, ""}}, Caveats{})
	a.a.Revoke(t4.ID)
	good := a.a.Revoked()[2]
	if good.ID != t4.ID {
		t.Fatalf("Revoked is not oldest first: %v", good.ID)
	}
	n, err := b.a.Apply(append(bad, good)...)
	if n != 1 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply(bad..., good): %d, %v; want 1 and ErrInvalid", n, err)
	}
	if err := b.a.Verify(t3); err != nil {
		t.Fatalf("a forged revocation took effect: %v", err)
	}
	if err := b.a.Verify(t4); !errors.Is(err, ErrRevoked) {
		t.Fatalf("the good revocation beside bad ones: %v", err)
	}
}

// Use counts are per node (documented): MaxUses n allows n checks on each.
func TestUseCountsArePerNode(t *testing.T) {
	a, b := newNode(t, sharedKey, nil), newNode(t, sharedKey, nil)
	tok := a.a.Mint("p1", []Grant{{Read, ""}}, Caveats{MaxUses: 1})
	for _, n := range []*node{a, b} {
		if err := n.a.Check(tok, "p1", Read, "x"); err != nil {
			t.Fatal(err)
		}
		if err := n.a.Check(tok, "p1", Read, "x"); !errors.Is(err, ErrUsedUp) {
			t.Fatalf("second use on the same node: %v", err)
		}
	}
}

// Property: over random delegation trees spread over three nodes, with
// random revocations made on random nodes and published to the others, a
// token is refused on every node exactly when it or one of its ancestors
// was revoked.
func TestRandomDelegationTreesRevokeExactlyTheSubtrees(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes := []*node{newNode(t, sharedKey, nil), newNode(t, sharedKey, nil), newNode(t, sharedKey, nil)}
		type made struct {
			tok    Token
			parent int // index in toks; -1 for a root
		}
		var toks []made
		scopes := []string{"", "tools/", "tools/a/", "tools/a/b/"}
		for range 2 + rng.IntN(3) {
			toks = append(toks, made{nodes[rng.IntN(3)].a.Mint("root", []Grant{{Read, scopes[rng.IntN(2)]}}, Caveats{}), -1})
		}
		for range 10 + rng.IntN(30) {
			pi := rng.IntN(len(toks))
			p := toks[pi].tok
			n := nodes[rng.IntN(3)]
			s := scopes[rng.IntN(len(scopes))]
			child, err := n.a.Delegate(p, "h", []Grant{{Read, s}}, Caveats{})
			if err != nil {
				// Only amplification may fail (nothing is revoked yet).
				if !errors.Is(err, ErrAmplify) {
					t.Fatalf("seed %d: %v", seed, err)
				}
				continue
			}
			toks = append(toks, made{child, pi})
		}
		revoked := map[int]bool{}
		for range 1 + rng.IntN(4) {
			i := rng.IntN(len(toks))
			revoked[i] = true
			nodes[rng.IntN(3)].a.Revoke(toks[i].tok.ID)
		}
		for i, n := range nodes {
			var peers []*node
			for j, m := range nodes {
				if j != i {
					peers = append(peers, m)
				}
			}
			n.publish(t, peers...)
		}
		dead := func(i int) bool {
			for ; i >= 0; i = toks[i].parent {
				if revoked[i] {
					return true
				}
			}
			return false
		}
		for i, m := range toks {
			for ni, n := range nodes {
				err := n.a.Verify(m.tok)
				if dead(i) != errors.Is(err, ErrRevoked) || (!dead(i) && err != nil) {
					t.Fatalf("seed %d, node %d, token %d (dead %v): %v", seed, ni, i, dead(i), err)
				}
			}
		}
	}
}

func TestParseKey(t *testing.T) {
	raw := []byte("0123456789abcdef0123456789abcdef")
	for _, s := range []string{
		"3031323334353637383961626364656630313233343536373839616263646566",
		"  3031323334353637383961626364656630313233343536373839616263646566\n",
		"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY",
	} {
		k, err := ParseKey(s)
		if err != nil || string(k) != string(raw) {
			t.Errorf("ParseKey(%q) = %q, %v", s, k, err)
		}
	}
	for s, want := range map[string]string{
		"":                 "empty",
		"deadbeef":         "decodes to 4 bytes",
		"not a key at all": "neither hexadecimal nor base64",
	} {
		_, err := ParseKey(s)
		if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "openssl rand") {
			t.Errorf("ParseKey(%q): %v, want ErrKey saying %q and how to make one", s, err, want)
		}
		if s != "" && err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
	if _, err := New(Options{Key: []byte("short")}); !errors.Is(err, ErrKey) {
		t.Fatalf("short key: %v", err)
	}
}
