package capability_test

import (
	"strings"
	"testing"

	"github.com/agentos-run/agentos/capability"
)

// A quota written in agentos.json converts to Limits, and a mistake names
// the key it was written at and what to write instead.
func TestQuotaLimits(t *testing.T) {
	l, err := capability.Quota{"tool_calls": 10, "cost_usd": 0.5}.Limits("quota")
	if err != nil || l[capability.ToolCalls] != 10 || l[capability.CostUSD] != 0.5 || len(l) != 2 {
		t.Fatalf("Limits = %v, %v", l, err)
	}
	if l, err := capability.Quota(nil).Limits("quota"); l != nil || err != nil {
		t.Fatalf("an empty quota: %v, %v; want nil limits", l, err)
	}
	for _, tc := range []struct {
		q         capability.Quota
		key, want string
	}{
		{capability.Quota{"tokens": 1}, "agent.quota", `agent.quota has an unknown meter "tokens": use one of [llm_tokens tool_calls cost_usd children wall_ms memory_mb]`},
		{capability.Quota{"wall_ms": -1}, "agents.templates.t.quota", `agents.templates.t.quota.wall_ms must not be negative`},
	} {
		if _, err := tc.q.Limits(tc.key); err == nil || err.Error() != tc.want {
			t.Errorf("%v at %s: %v, want %q", tc.q, tc.key, err, tc.want)
		}
	}
	if err := capability.CheckGrants("agent.grants", []capability.Grant{{Right: capability.Read}, {Right: "sudo"}}); err == nil || !strings.HasPrefix(err.Error(), `agent.grants has an unknown right "sudo": use one of [read`) {
		t.Errorf("CheckGrants: %v", err)
	}
}

// The capability section names a variable, never a key: Validate refuses
// what is no variable name, and Key reads the variable and says what to do
// when it is unset or short, without quoting it.
func TestConfigKey(t *testing.T) {
	if err := (capability.Config{SigningKeyEnv: "0123abcd"}).Validate(); err == nil || !strings.Contains(err.Error(), `capability.signing_key_env "0123abcd" is not an environment variable name`) {
		t.Errorf("a key written in the file: %v", err)
	}
	env := map[string]string{"K": strings.Repeat("ab", 32), "SHORT": "abcd"}
	getenv := func(n string) string { return env[n] }
	if k, err := (capability.Config{}).Key(getenv); k != nil || err != nil {
		t.Errorf("no setting: %v, %v; want a per-process key (nil)", k, err)
	}
	if _, err := (capability.Config{}).ClusterKey(getenv); err == nil || !strings.Contains(err.Error(), "signing_key_env") || !strings.Contains(err.Error(), "openssl rand") {
		t.Errorf("a clustered node without the setting: %v", err)
	}
	if k, err := (capability.Config{SigningKeyEnv: "K"}).ClusterKey(getenv); err != nil || len(k) != 32 {
		t.Errorf("the key in K: %d bytes, %v", len(k), err)
	}
	if _, err := (capability.Config{SigningKeyEnv: "UNSET"}).Key(getenv); err == nil || !strings.Contains(err.Error(), "UNSET, which is not set") {
		t.Errorf("an unset variable: %v", err)
	}
	if _, err := (capability.Config{SigningKeyEnv: "SHORT"}).Key(getenv); err == nil || strings.Contains(err.Error(), "abcd") {
		t.Errorf("a short key: %v (it must be refused, never quoted)", err)
	}
}
