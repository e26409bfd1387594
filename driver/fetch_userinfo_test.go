package driver

import (
	"net/url"
	"testing"
)

// REVIEW: userinfo after a host-only prefix bypasses the allow-list.
func TestAllowListRefusesUserinfoAfterAHostPrefix(t *testing.T) {
	allow := []string{"https://api.example.com"}
	for _, raw := range []string{"https://api.example.com:443@evil.io/x", "https://api.example.com:x@evil.io/"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if Allowed(allow, raw) && u.Hostname() != "api.example.com" {
			t.Errorf("%s allowed, but the request goes to %s", raw, u.Hostname())
		}
	}
}
