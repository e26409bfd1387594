package capability_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/agentos-run/agentos/capability"
)

// A seal verifies under the same key and purpose only; TokenLimits gives
// the earliest expiry of a chain and the uses left on this authority.
func TestSealAndTokenLimits(t *testing.T) {
	a, _ := capability.New(capability.Options{Key: bytes.Repeat([]byte("a"), 32)})
	b, _ := capability.New(capability.Options{Key: bytes.Repeat([]byte("b"), 32)})
	same, _ := capability.New(capability.Options{Key: bytes.Repeat([]byte("a"), 32)})
	mac := a.Seal("snapshot", []byte(`{"x":1}`))
	if err := same.Unseal("snapshot", []byte(`{"x":1}`), mac); err != nil {
		t.Fatalf("same key: %v", err)
	}
	for name, err := range map[string]error{
		"other key":     b.Unseal("snapshot", []byte(`{"x":1}`), mac),
		"edited":        a.Unseal("snapshot", []byte(`{"x":2}`), mac),
		"other purpose": a.Unseal("token", []byte(`{"x":1}`), mac),
	} {
		if !errors.Is(err, capability.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}

	soon, later := time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)
	root := a.Mint("p", []capability.Grant{{Right: capability.Read}}, capability.Caveats{NotAfter: later, MaxUses: 4})
	child, err := a.Delegate(root, "c", nil, capability.Caveats{NotAfter: soon, MaxUses: 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := a.Check(child, "c", capability.Read, "x"); err != nil {
			t.Fatal(err)
		}
	}
	notAfter, left, limited := a.TokenLimits(child)
	if !notAfter.Equal(soon) || left != 1 || !limited {
		t.Fatalf("TokenLimits = %v %d %v, want the earliest expiry, 1 use left (min 4, 10 minus 3)", notAfter, left, limited)
	}
	if _, _, limited := a.TokenLimits(a.Mint("q", nil, capability.Caveats{})); limited {
		t.Fatal("a token without MaxUses reported limited")
	}
}
