package capability

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"time"
)

// sealPrefix separates a seal's MAC input from a token signature's (a
// token's input is its JSON, which starts with '{').
const sealPrefix = "agentos/seal/"

// Seal returns a MAC of b for purpose under the Authority's key: whoever
// holds the key (this Authority, or a node sharing its key) can check with
// Unseal that b is unchanged. The kernel seals a process snapshot with it,
// so that a restore never grants what the snapshot did not hold.
func (a *Authority) Seal(purpose string, b []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(sealPrefix + purpose + "\x00"))
	m.Write(b)
	return m.Sum(nil)
}

// Unseal checks mac, made by Seal(purpose, b) with the same key; it fails
// with ErrInvalid when b was edited or sealed under another key.
func (a *Authority) Unseal(purpose string, b, mac []byte) error {
	if !hmac.Equal(a.Seal(purpose, b), mac) {
		return fmt.Errorf("%w: the %s's seal does not match: it was edited, or sealed by an authority with another key (nodes that restore each other's %ss MUST share capability.signing_key_env)", ErrInvalid, purpose, purpose)
	}
	return nil
}

// TokenLimits is what a token allows as one set of caveats: the earliest expiry
// of its chain, and the checks it has left on this Authority (uses
// counted here; 0 with ok false: no use limit; 0 with ok true: used up).
// A token re-issued with these caveats and the same grants allows no more
// than the original.
func (a *Authority) TokenLimits(t Token) (notAfter time.Time, usesLeft int, limited bool) {
	a.mu.Lock()
	used := a.uses[t.ID]
	a.mu.Unlock()
	for _, c := range t.Caveats {
		if !c.NotAfter.IsZero() && (notAfter.IsZero() || c.NotAfter.Before(notAfter)) {
			notAfter = c.NotAfter
		}
		if c.MaxUses > 0 {
			left := max(0, c.MaxUses-used)
			if !limited || left < usesLeft {
				usesLeft = left
			}
			limited = true
		}
	}
	return notAfter, usesLeft, limited
}

// Now is the Authority's clock (the one expiry caveats are checked
// against).
func (a *Authority) Now() time.Time { return a.now() }
