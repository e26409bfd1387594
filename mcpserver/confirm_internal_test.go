package mcpserver

import (
	"strings"
	"testing"
	"time"
)

// A confirmation state is redeemed once, only for what it was signed for,
// before it expires, and only with this server's key.
func TestConfirmStateRedeem(t *testing.T) {
	c := newConfirmer()
	now := time.Now()
	st := confirmState{Session: "s1", PID: 7, Path: "tools/risky.ts", Hash: "abc", Expires: now.Add(time.Minute).Unix(), Nonce: "n1"}
	want := st
	want.Expires, want.Nonce = 0, ""
	state := c.sign(st)
	for _, tc := range []struct {
		name  string
		state string
		want  confirmState
		now   time.Time
		err   string
	}{
		{"another session", state, confirmState{Session: "s2", PID: 7, Path: st.Path, Hash: st.Hash}, now, "another session"},
		{"another process", state, confirmState{Session: "s1", PID: 8, Path: st.Path, Hash: st.Hash}, now, "another session"},
		{"another path", state, confirmState{Session: "s1", PID: 7, Path: "tools/other.ts", Hash: st.Hash}, now, "asked for tools/risky.ts"},
		{"changed content", state, confirmState{Session: "s1", PID: 7, Path: st.Path, Hash: "def"}, now, "changed"},
		{"expired", state, want, now.Add(2 * time.Minute), "expired"},
		{"another server's key", newConfirmer().sign(st), want, now, "nobody asked for"},
		{"edited", strings.Replace(state, state[:4], "eyJz", 1) + "x", want, now, "nobody asked for"},
		{"no state", "", want, now, "nobody asked for"},
	} {
		if err := c.redeem(tc.state, tc.want, tc.now); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.err)
		}
	}
	if err := c.redeem(state, want, now); err != nil {
		t.Fatalf("the state as signed: %v", err)
	}
	if err := c.redeem(state, want, now); err == nil || !strings.Contains(err.Error(), "used already") {
		t.Errorf("the state redeemed twice: %v, want refused", err)
	}
}
