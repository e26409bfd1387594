package capability

import (
	"fmt"
	"os"
	"slices"

	"github.com/agentos-run/agentos/config"
)

// Meters lists every meter, in display order (ps, quota): what a quota in
// agentos.json may name.
var Meters = []Meter{LLMTokens, ToolCalls, CostUSD, Children, WallMS, MemoryMB}

// Config is the "capability" section of agentos.json: the key that signs
// capability tokens. The zero value: a random key per process, so that a
// token verifies only in the process that minted it.
type Config struct {
	// SigningKeyEnv names the environment variable holding the key that
	// signs and verifies capability tokens: at least MinKeyBytes random
	// bytes, written as hexadecimal or base64 (e.g. `openssl rand -hex
	// 32`). IMPORTANT: the key itself never goes in the file; a clustered
	// node MUST set it (see ClusterKey), and every node of a cluster MUST
	// hold the same key.
	SigningKeyEnv string `json:"signing_key_env,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (c Config) Validate() error {
	if env := c.SigningKeyEnv; env != "" && !config.EnvName(env) {
		return fmt.Errorf("capability.signing_key_env %q is not an environment variable name: name the variable that holds the key, e.g. \"AGENTOS_CAPABILITY_KEY\" (the key itself never goes in this file)", env)
	}
	return nil
}

// Key returns the signing key from the environment variable
// signing_key_env names (getenv; nil: os.Getenv), decoded by ParseKey;
// nil, and no error, when the setting is absent (the caller then uses a
// random key per process). A setting whose variable is unset or empty, or
// holds a bad or short key, is an error saying what to do; it never quotes
// the key.
func (c Config) Key(getenv func(string) string) ([]byte, error) {
	env := c.SigningKeyEnv
	if env == "" {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	v := getenv(env)
	if v == "" {
		return nil, fmt.Errorf("agentos: capability.signing_key_env names %s, which is not set: export the cluster's signing key in it (at least %d random bytes as hex or base64, e.g. `openssl rand -hex 32`; the same on every node), or remove the setting for a per-process key", env, MinKeyBytes)
	}
	key, err := ParseKey(v)
	if err != nil {
		return nil, fmt.Errorf("agentos: the capability signing key in %s: %w", env, err)
	}
	return key, nil
}

// ClusterKey is Key for a node that joins a cluster: there the setting is
// REQUIRED (tokens minted on one node must verify on the others), so its
// absence is an error too.
func (c Config) ClusterKey(getenv func(string) string) ([]byte, error) {
	if c.SigningKeyEnv == "" {
		return nil, fmt.Errorf("agentos: a clustered node needs a shared capability signing key: set \"capability\": {\"signing_key_env\": \"AGENTOS_CAPABILITY_KEY\"} in %s and export the same key (at least %d random bytes as hex or base64, e.g. `openssl rand -hex 32`) in that variable on every node", config.File, MinKeyBytes)
	}
	return c.Key(getenv)
}

// Quota is a quota as agentos.json writes it ("quota", "agent.quota",
// "agents.templates.*.quota", "agents.tournament.quota"): a limit by
// meter name. The zero value limits nothing.
type Quota map[string]float64

// Limits converts the quota written at key (e.g. "agent.quota"), refusing
// an unknown meter and a negative limit with an error naming key; an
// empty quota is nil Limits.
func (q Quota) Limits(key string) (Limits, error) {
	if len(q) == 0 {
		return nil, nil
	}
	out := Limits{}
	for k, v := range q {
		m := Meter(k)
		if !slices.Contains(Meters, m) {
			return nil, fmt.Errorf("%s has an unknown meter %q: use one of %v", key, k, Meters)
		}
		if v < 0 {
			return nil, fmt.Errorf("%s.%s must not be negative", key, k)
		}
		out[m] = v
	}
	return out, nil
}

// CheckGrants refuses a grant naming an unknown right in the list of
// grants written at key (e.g. "agent.grants").
func CheckGrants(key string, grants []Grant) error {
	rights := Rights()
	for _, g := range grants {
		if !slices.Contains(rights, g.Right) {
			return fmt.Errorf("%s has an unknown right %q: use one of %v", key, g.Right, rights)
		}
	}
	return nil
}
