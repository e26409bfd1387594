package capability

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newAuth(t *testing.T) (*Authority, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	a, err := NewAuthority([]byte("0123456789abcdef0123456789abcdef"), c.now)
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		scope, resource string
		want            bool
	}{
		{"", "anything", true},
		{"tools/", "tools/a.ts", true},
		{"tools/", "tools", false},
		{"tools/a", "tools/a", true},
		{"tools/a", "tools/a/b.ts", true},
		{"tools/a", "tools/ab.ts", false},
		{"https://api.example.com/", "https://api.example.com/v1", true},
		{"https://api.example.com/", "https://api.example.com.evil.io/", false},
	} {
		if got := scopeCovers(tc.scope, tc.resource); got != tc.want {
			t.Errorf("scope %q on %q: %v, want %v", tc.scope, tc.resource, got, tc.want)
		}
	}
}

func TestCheckGrantsAndRefusals(t *testing.T) {
	a, _ := newAuth(t)
	tok := a.Mint("p1", []Grant{{Read, "tools/"}, {Exec, "tools/math/"}, {Fetch, "https://api.example.com/"}}, Caveats{})
	if err := a.Check(tok, "p1", Read, "tools/x.ts"); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(tok, "p1", Exec, "tools/math/fib.ts"); err != nil {
		t.Fatal(err)
	}
	err := a.Check(tok, "p1", Write, "tools/x.ts")
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), `lacks the "write" right on "tools/x.ts"`) {
		t.Fatalf("write: %v", err)
	}
	if err := a.Check(tok, "p1", Exec, "tools/other.ts"); !errors.Is(err, ErrDenied) {
		t.Fatalf("exec outside scope: %v", err)
	}
	if err := a.Check(tok, "p2", Read, "tools/x.ts"); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "held by p1") {
		t.Fatalf("another holder: %v", err)
	}
}

func TestForgeryIsRefused(t *testing.T) {
	a, _ := newAuth(t)
	tok := a.Mint("p1", []Grant{{Read, "tools/"}}, Caveats{MaxUses: 1})
	for name, edit := range map[string]func(*Token){
		"widen scope":    func(t *Token) { t.Grants[0].Scope = "" },
		"add a right":    func(t *Token) { t.Grants = append(t.Grants, Grant{Write, "tools/"}) },
		"change holder":  func(t *Token) { t.Holder = "p2" },
		"strip a caveat": func(t *Token) { t.Caveats = nil },
		"drop the chain": func(t *Token) { t.Chain = []string{"x"} },
		"new signature":  func(t *Token) { t.Sig = []byte("nope") },
	} {
		forged := tok
		forged.Grants = append([]Grant(nil), tok.Grants...)
		edit(&forged)
		if err := a.Check(forged, forged.Holder, Read, "tools/x.ts"); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	other, _ := NewAuthority(nil, nil) // another key: a token it mints is not ours
	if err := a.Verify(other.Mint("p1", []Grant{{Read, ""}}, Caveats{})); !errors.Is(err, ErrInvalid) {
		t.Errorf("foreign token: %v", err)
	}
	if _, err := Decode("not-a-token"); !errors.Is(err, ErrInvalid) {
		t.Errorf("decode garbage: %v", err)
	}
	back, err := Decode(tok.Encode())
	if err != nil || a.Verify(back) != nil {
		t.Fatalf("encode round trip: %v %v", err, a.Verify(back))
	}
}

func TestAttenuationNeverAmplifies(t *testing.T) {
	a, c := newAuth(t)
	root := a.Mint("p1", []Grant{{Read, "tools/"}, {Write, "tools/drafts/"}}, Caveats{NotAfter: c.t.Add(time.Hour)})
	child, err := a.Attenuate(root, []Grant{{Read, "tools/reports/"}}, Caveats{MaxUses: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(child, "p1", Read, "tools/reports/q.ts"); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(child, "p1", Read, "tools/other.ts"); !errors.Is(err, ErrDenied) {
		t.Fatalf("narrowed scope: %v", err)
	}
	for _, g := range []Grant{{Write, "tools/"}, {Read, ""}, {Exec, "tools/"}, {Write, "tools/drafts"}} {
		if _, err := a.Attenuate(root, []Grant{g}, Caveats{}); !errors.Is(err, ErrAmplify) {
			t.Errorf("attenuate to %+v: %v", g, err)
		}
	}
	// Re-deriving from the child cannot shed the parent's caveats.
	grand, err := a.Attenuate(child, []Grant{{Read, "tools/reports/"}}, Caveats{})
	if err != nil {
		t.Fatal(err)
	}
	if len(grand.Caveats) != 2 {
		t.Fatalf("caveats lost on re-derivation: %+v", grand.Caveats)
	}
	c.t = c.t.Add(2 * time.Hour)
	if err := a.Check(grand, "p1", Read, "tools/reports/q.ts"); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired ancestor caveat: %v", err)
	}
}

func TestUseCount(t *testing.T) {
	a, _ := newAuth(t)
	tok := a.Mint("p1", []Grant{{Exec, ""}}, Caveats{MaxUses: 2})
	for i := range 2 {
		if err := a.Check(tok, "p1", Exec, "tools/a.ts"); err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
	}
	if err := a.Check(tok, "p1", Exec, "tools/a.ts"); !errors.Is(err, ErrUsedUp) {
		t.Fatalf("third use: %v", err)
	}
}

func TestRevocationIsTransitive(t *testing.T) {
	a, _ := newAuth(t)
	root := a.Mint("kernel", []Grant{{Read, ""}, {Spawn, ""}}, Caveats{})
	toP1, _ := a.Delegate(root, "p1", nil, Caveats{})
	toP2, _ := a.Delegate(toP1, "p2", []Grant{{Read, "tools/"}}, Caveats{})
	other := a.Mint("p3", []Grant{{Read, ""}}, Caveats{})
	if err := a.Check(toP2, "p2", Read, "tools/a.ts"); err != nil {
		t.Fatal(err)
	}
	a.Revoke(toP1.ID)
	for name, tok := range map[string]Token{"revoked": toP1, "derived": toP2} {
		if err := a.Check(tok, tok.Holder, Read, "tools/a.ts"); !errors.Is(err, ErrRevoked) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := a.Delegate(toP1, "p4", nil, Caveats{}); !errors.Is(err, ErrRevoked) {
		t.Errorf("deriving from a revoked token: %v", err)
	}
	if a.Verify(root) != nil || a.Verify(other) != nil {
		t.Error("revocation reached tokens outside the chain")
	}
	a.RevokeHolder("p3") // p3 exits
	if err := a.Verify(other); !errors.Is(err, ErrRevoked) {
		t.Errorf("exited holder: %v", err)
	}
}

func TestShortKeyIsRefused(t *testing.T) {
	if _, err := NewAuthority([]byte("short"), nil); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("got %v", err)
	}
}

// A held token skips the signature check only: revocation, expiry and use
// counts still apply, and a forged token cannot be held.
func TestHeld(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	auth, err := NewAuthority(nil, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	tok := auth.Mint("p", []Grant{{Right: Read, Scope: "tools/"}}, Caveats{NotAfter: now.Add(time.Hour), MaxUses: 2})
	forged := tok
	forged.Grants = []Grant{{Right: Write}}
	if _, err := auth.Hold(forged); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Hold(forged) = %v, want ErrInvalid", err)
	}
	h, err := auth.Hold(tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Check("p", Write, "tools/a.ts"); !errors.Is(err, ErrDenied) {
		t.Fatalf("write with a read token: %v", err)
	}
	if !h.Covers(Read, "tools/a.ts") || h.Covers(Read, "secret.ts") || h.Covers(Write, "tools/a.ts") {
		t.Fatal("Covers disagrees with the grants")
	}
	if err := h.Check("p", Read, "tools/a.ts"); err != nil {
		t.Fatal(err)
	}
	if err := h.Check("p", Read, "tools/a.ts"); err != nil { // Covers consumed no use
		t.Fatal(err)
	}
	if err := h.Check("p", Read, "tools/a.ts"); !errors.Is(err, ErrUsedUp) {
		t.Fatalf("third use: %v, want ErrUsedUp", err)
	}
	h2, _ := auth.Hold(auth.Mint("q", []Grant{{Right: Read}}, Caveats{NotAfter: now.Add(time.Minute)}))
	now = now.Add(2 * time.Minute)
	if err := h2.Check("q", Read, "x"); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	auth.RevokeHolder("p")
	if err := h.Check("p", Read, "tools/a.ts"); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	if h.Covers(Read, "tools/a.ts") {
		t.Fatal("a revoked token covers")
	}
	// The held copy is not aliased to the caller's token.
	got := h.Token()
	got.Grants[0].Right = Write
	if h.Token().Grants[0].Right != Read {
		t.Fatal("Token() aliases the held token")
	}
}

func TestGrantReaches(t *testing.T) {
	for _, c := range []struct {
		scope, resource string
		want            bool
	}{
		{"", "github", true},
		{"github", "github", true},
		{"github/", "github", true},
		{"github/create_issue", "github", true},
		{"githubx/", "github", false},
		{"gitlab/", "github", false},
	} {
		if got := (Grant{Right: MCP, Scope: c.scope}).Reaches(MCP, c.resource); got != c.want {
			t.Errorf("a grant on %q reaches %q: %v, want %v", c.scope, c.resource, got, c.want)
		}
	}
	if (Grant{Right: Read}).Reaches(MCP, "github") {
		t.Error("a read grant reaches an mcp server")
	}
}

// Decode answers a token it decoded before from its memo: the same token
// each time, each caller its own copy (a caller editing its token, as a
// forger would, changes nothing another caller decodes), and a token that
// left the memo decodes again.
func TestDecodeMemoHandsOutCopies(t *testing.T) {
	a, c := newAuth(t)
	root := a.Mint("p1", []Grant{{Read, "tools/"}, {Write, "tools/drafts/"}}, Caveats{NotAfter: c.t.Add(time.Hour)})
	tok, err := a.Attenuate(root, []Grant{{Read, "tools/reports/"}}, Caveats{MaxUses: 2})
	if err != nil {
		t.Fatal(err)
	}
	enc := tok.Encode()
	for range 2 { // the first decoding fills the memo, the second is answered from it
		edited, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		edited.Grants[0].Scope = ""
		edited.Chain[0] = "forged"
		edited.Caveats[0].MaxUses = 99
		edited.Holders[0] = "p2"
		edited.IssuedChain[0] = 1
		edited.Sig[0] ^= 0xff
	}
	second, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second, tok) {
		t.Fatalf("second decoding differs from the token: %+v", second)
	}
	if err := a.Verify(second); err != nil {
		t.Fatalf("second decoding: %v", err)
	}
	for i := range memoSize + 1 { // push enc out of the memo
		if _, err := Decode(a.Mint(fmt.Sprint("q", i), []Grant{{Read, ""}}, Caveats{}).Encode()); err != nil {
			t.Fatal(err)
		}
	}
	if third, err := Decode(enc); err != nil || !reflect.DeepEqual(third, tok) {
		t.Fatalf("after the memo was emptied: %+v %v", third, err)
	}
	if _, err := Decode(enc[:len(enc)-4]); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a damaged token: %v", err)
	}
}

func BenchmarkDecodeSameToken(b *testing.B) {
	a, err := NewAuthority([]byte("0123456789abcdef0123456789abcdef"), time.Now)
	if err != nil {
		b.Fatal(err)
	}
	enc := a.Mint("p1", []Grant{{Read, "tools/"}, {Write, "tools/drafts/"}, {Exec, "tools/"}}, Caveats{}).Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// A held token's Encoded is its Encode, whatever a holder does to the
// copies Token hands out.
func TestHeldEncodedIsTheTokensEncoding(t *testing.T) {
	a, c := newAuth(t)
	tok := a.Mint("p1", []Grant{{Read, "tools/"}}, Caveats{NotAfter: c.t.Add(time.Hour)})
	h, err := a.Hold(tok)
	if err != nil {
		t.Fatal(err)
	}
	want := tok.Encode()
	edited := h.Token()
	edited.Grants[0].Scope = ""
	edited.Sig[0] ^= 0xff
	for range 2 {
		if got := h.Encoded(); got != want {
			t.Fatalf("Encoded = %q, want the token's encoding %q", got, want)
		}
	}
}

// HoldEncoded remembers a good signature only: a forged or edited string
// is refused every time, a remembered one is still refused once revoked or
// expired, and another key's Authority never takes it.
func TestHoldEncodedRemembersOnlyGoodSignatures(t *testing.T) {
	auth, clk := newAuth(t)
	tok := auth.Mint("p", []Grant{{Right: Read, Scope: "tools/"}}, Caveats{NotAfter: clk.t.Add(time.Hour), MaxUses: 1})
	enc := tok.Encode()
	forged := tok
	forged.Grants = []Grant{{Right: Write}}
	for range 2 {
		if _, err := auth.HoldEncoded(forged.Encode()); !errors.Is(err, ErrInvalid) {
			t.Fatalf("HoldEncoded(forged) = %v, want ErrInvalid", err)
		}
		h, err := auth.HoldEncoded(enc)
		if err != nil {
			t.Fatal(err)
		}
		if h.Encoded() != enc || h.Token().ID != tok.ID || !reflect.DeepEqual(h.Token().Grants, tok.Grants) {
			t.Fatal("the held token is not the one encoded")
		}
	}
	if _, err := auth.HoldEncoded("garbage"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("garbage: %v", err)
	}
	other, _ := NewAuthority(nil, clk.now) // another key
	if _, err := other.HoldEncoded(enc); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another key's Authority held it: %v", err)
	}
	h, _ := auth.HoldEncoded(enc)
	if err := h.Check("p", Read, "tools/a.ts"); err != nil {
		t.Fatal(err)
	}
	h, _ = auth.HoldEncoded(enc)
	if err := h.Check("p", Read, "tools/a.ts"); !errors.Is(err, ErrUsedUp) {
		t.Fatalf("the use count is shared by every holding: %v", err)
	}
	clk.t = clk.t.Add(2 * time.Hour)
	if _, err := auth.HoldEncoded(enc); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired yet held: %v", err)
	}
	clk.t = clk.t.Add(-2 * time.Hour)
	auth.Revoke(tok.ID)
	if _, err := auth.HoldEncoded(enc); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked yet held: %v", err)
	}
}
