package e2e_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
)

const testCapKey = "3031323334353637383961626364656630313233343536373839616263646566"

func TestCapabilityKeyFromTheEnvironment(t *testing.T) {
	var none host.Config
	if k, err := none.CapabilityKey(); k != nil || err != nil {
		t.Fatalf("no setting: %v, %v; want nil, nil (a per-process key)", k, err)
	}
	if _, err := none.ClusterCapabilityKey(); err == nil || !strings.Contains(err.Error(), "signing_key_env") || !strings.Contains(err.Error(), "openssl rand") {
		t.Fatalf("a clustered node without a key: %v", err)
	}

	cfg := host.Config{Capability: host.CapabilityConfig{SigningKeyEnv: "TEST_AGENTOS_CAP_KEY"}}
	t.Setenv("TEST_AGENTOS_CAP_KEY", "")
	for _, get := range []func() ([]byte, error){cfg.CapabilityKey, cfg.ClusterCapabilityKey} {
		if _, err := get(); err == nil || !strings.Contains(err.Error(), "TEST_AGENTOS_CAP_KEY, which is not set") {
			t.Fatalf("unset variable: %v", err)
		}
	}
	t.Setenv("TEST_AGENTOS_CAP_KEY", "c2hvcnQga2V5") // "short key"
	if _, err := cfg.CapabilityKey(); !errors.Is(err, capability.ErrKey) || !strings.Contains(err.Error(), "9 bytes") || strings.Contains(err.Error(), "c2hvcnQga2V5") {
		t.Fatalf("short key: %v (want ErrKey, the length, and never the key)", err)
	}
	t.Setenv("TEST_AGENTOS_CAP_KEY", testCapKey)
	k, err := cfg.ClusterCapabilityKey()
	if err != nil || string(k) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("good key: %q, %v", k, err)
	}
	if !slices.Contains(cfg.SecretValues(), testCapKey) {
		t.Fatal("the signing key is not scrubbed from the journal (SecretValues)")
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, host.ConfigFile), []byte(`{"capability": {"signing_key_env": "0123456789abcdef"}}`), 0o600)
	if _, err := host.LoadConfig(dir); err == nil || !strings.Contains(err.Error(), "not an environment variable name") {
		t.Fatalf("a key written in place of the variable's name: %v", err)
	}
}

// Two runtimes (two nodes) configured with the same key accept each
// other's tokens; a runtime with the setting but no key does not start.
func TestRuntimesSharingAKeyVerifyEachOthersTokens(t *testing.T) {
	t.Setenv("TEST_AGENTOS_CAP_KEY", testCapKey)
	cfg := host.Config{Isolation: "inprocess", Capability: host.CapabilityConfig{SigningKeyEnv: "TEST_AGENTOS_CAP_KEY"}}
	cfg.Root = t.TempDir()
	a := start(t, cfg)
	cfg.Root = t.TempDir()
	b := start(t, cfg)
	tok, ok := a.Agent().Token()
	if !ok {
		t.Fatal("the default process has no token")
	}
	if err := b.Kernel().Authority().Verify(tok); err != nil {
		t.Fatalf("node B refuses node A's token: %v", err)
	}
	cfg.Root, cfg.Capability = t.TempDir(), host.CapabilityConfig{}
	c := start(t, cfg)
	if err := c.Kernel().Authority().Verify(tok); !errors.Is(err, capability.ErrInvalid) {
		t.Fatalf("a node with its own random key: %v, want ErrInvalid", err)
	}

	t.Setenv("TEST_AGENTOS_CAP_KEY", "")
	cfg.Root, cfg.Capability, cfg.Logger = t.TempDir(), host.CapabilityConfig{SigningKeyEnv: "TEST_AGENTOS_CAP_KEY"}, quiet
	if rt, err := host.Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "which is not set") {
		if rt != nil {
			rt.Close()
		}
		t.Fatalf("start without the key: %v", err)
	}
}
