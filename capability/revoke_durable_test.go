package capability

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tick moves the clock a second on: holder revocations compare when a
// token was issued with when its holder was revoked.
func (c *clock) tick() { c.t = c.t.Add(time.Second) }

// Revoking a holder kills every token issued to it up to then, on any node
// sharing the key (it was never told of them), and every token derived from
// one, whoever holds it; a token minted for the holder afterwards lives.
func TestRevokeIssuedToKillsTheHoldersTokensAndTheirDescendants(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	minter := newNode(t, sharedKey, c.now) // 'agentos token': another process
	alice := minter.a.Mint("alice", []Grant{{Right: Read}, {Right: Exec, Scope: "tools/"}}, Caveats{})
	bob, err := minter.a.Delegate(alice, "bob", []Grant{{Right: Read, Scope: "tools/"}}, Caveats{})
	if err != nil {
		t.Fatal(err)
	}
	carol := minter.a.Mint("carol", []Grant{{Right: Read}}, Caveats{})
	c.tick()

	revoker := newNode(t, sharedKey, c.now) // the node an operator revokes on
	r, err := revoker.a.RevokeIssuedTo("alice")
	if err != nil {
		t.Fatal(err)
	}
	if r.Holder != "alice" || !r.Durable {
		t.Fatalf("revocation = %+v, want a durable revocation of holder alice", r)
	}
	for name, tok := range map[string]Token{"alice's": alice, "bob's (delegated from alice's)": bob} {
		if err := revoker.a.Verify(tok); !errors.Is(err, ErrRevoked) {
			t.Errorf("%s token after alice was revoked: %v, want ErrRevoked", name, err)
		}
	}
	if err := revoker.a.Verify(carol); err != nil {
		t.Errorf("carol's token after alice was revoked: %v", err)
	}
	c.tick()
	again := minter.a.Mint("alice", []Grant{{Right: Read}}, Caveats{})
	if err := revoker.a.Verify(again); err != nil {
		t.Errorf("a token minted for alice after her revocation: %v, want it valid", err)
	}
	// The third node learns it from the wire.
	third := newNode(t, sharedKey, c.now)
	revoker.publish(t, third)
	if err := third.a.Verify(bob); !errors.Is(err, ErrRevoked) {
		t.Errorf("third node, bob's token after the published revocation of alice: %v, want ErrRevoked", err)
	}
	if err := third.a.Verify(again); err != nil {
		t.Errorf("third node, alice's new token: %v", err)
	}
}

// A holder revocation whose holder or time was changed on the wire is
// refused: the signature covers both.
func TestHolderRevocationTamperedIsRefused(t *testing.T) {
	a := newNode(t, sharedKey, nil)
	r, err := a.a.RevokeIssuedTo("alice")
	if err != nil {
		t.Fatal(err)
	}
	b := newNode(t, sharedKey, nil)
	for name, bad := range map[string]Revocation{
		"holder": {Holder: "mallory", At: r.At, Durable: true, Sig: r.Sig},
		"time":   {Holder: "alice", At: r.At.Add(time.Hour), Durable: true, Sig: r.Sig},
		"kind":   {ID: "alice", At: r.At, Durable: true, Sig: r.Sig},
	} {
		if n, err := b.a.Apply(bad); n != 0 || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s changed: applied %d, err %v; want refused with ErrInvalid", name, n, err)
		}
	}
	if n, err := b.a.Apply(RevocationFromProto(r.Proto())); n != 1 || err != nil {
		t.Fatalf("the genuine revocation through the wire: applied %d, %v", n, err)
	}
}

// Durable revocations (RevokeToken, RevokeIssuedTo, and those applied from
// another node) are in the store and in force in the next Authority that
// opens it; a process's revocation (Revoke, RevokeHolder) is not stored.
func TestDurableRevocationsOutliveTheAuthority(t *testing.T) {
	dir := t.TempDir()
	store := RevocationFile(filepath.Join(dir, "revocations.db"))
	peerStore := RevocationFile(filepath.Join(dir, "peer.db"))
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	mint := newNode(t, sharedKey, c.now).a
	byID := mint.Mint("mcp-client", []Grant{{Right: Exec}}, Caveats{})
	child, _ := mint.Delegate(byID, "helper", nil, Caveats{})
	byHolder := mint.Mint("alice", []Grant{{Right: Exec}}, Caveats{})
	proc := mint.Mint("proc", []Grant{{Right: Exec}}, Caveats{})
	c.tick()

	a, err := New(Options{Key: sharedKey, Now: c.now, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var out []Revocation
	a.Subscribe(func(r Revocation) { out = append(out, r) })
	if _, err := a.RevokeToken(byID.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RevokeIssuedTo("alice"); err != nil {
		t.Fatal(err)
	}
	a.Revoke(proc.ID)
	peer, err := New(Options{Key: sharedKey, Now: c.now, Store: peerStore})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Apply(out...); err != nil {
		t.Fatal(err)
	}

	for name, s := range map[string]RevocationStore{"the revoking node's": store, "the applying node's": peerStore} {
		b, err := New(Options{Key: sharedKey, Now: c.now, Store: s})
		if err != nil {
			t.Fatalf("%s store: %v", name, err)
		}
		for what, tok := range map[string]Token{"the revoked id": byID, "its child": child, "the revoked holder's": byHolder} {
			if err := b.Verify(tok); !errors.Is(err, ErrRevoked) {
				t.Errorf("%s store, %s token after a restart: %v, want ErrRevoked", name, what, err)
			}
		}
		if err := b.Verify(proc); err != nil {
			t.Errorf("%s store: a process's revocation was stored (%v); only durable ones are", name, err)
		}
	}
}

// RevokeToken refuses what is not a token id, saying what one looks like.
func TestRevokeTokenRefusesMalformedIDs(t *testing.T) {
	a := newNode(t, sharedKey, nil).a
	for _, id := range []string{"", "alice", strings.Repeat("a", 200)} {
		if _, err := a.RevokeToken(id); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "24 hexadecimal") {
			t.Errorf("RevokeToken(%q) = %v, want ErrInvalid naming the form of an id", id, err)
		}
	}
	if _, err := a.RevokeIssuedTo(""); !errors.Is(err, ErrInvalid) {
		t.Errorf("RevokeIssuedTo(\"\") = %v, want ErrInvalid", err)
	}
}
