package cluster

import (
	"strings"
	"testing"
)

// WithEnv reads AGENTOS_CLUSTER and AGENTOS_CLUSTER_INSECURE_LOOPBACK as
// booleans over the file's values, and refuses anything else by name.
func TestWithEnvBooleans(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := Config{InsecureLoopback: true}.WithEnv(env(map[string]string{"AGENTOS_CLUSTER": " yes ", "AGENTOS_CLUSTER_INSECURE_LOOPBACK": "off"}))
	if err != nil || !c.Enabled || c.InsecureLoopback {
		t.Fatalf("got %+v, %v; want enabled, not insecure", c, err)
	}
	if c, err = (Config{Enabled: true}).WithEnv(env(nil)); err != nil || !c.Enabled {
		t.Fatalf("unset variables changed the file's value: %+v, %v", c, err)
	}
	for _, name := range []string{"AGENTOS_CLUSTER", "AGENTOS_CLUSTER_INSECURE_LOOPBACK"} {
		if _, err := (Config{}).WithEnv(env(map[string]string{name: "maybe"})); err == nil || !strings.Contains(err.Error(), name+`="maybe": use 1 or 0`) {
			t.Fatalf("%s=maybe: %v", name, err)
		}
	}
}
