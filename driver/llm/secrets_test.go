package llm

import "testing"

// The client tells its journal which key to scrub (no driver did).
func TestClientSecrets(t *testing.T) {
	t.Setenv("AGENTOS_TEST_LLM_KEY", "sk-client-secret-1")
	c, err := New(Config{Model: "m", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "AGENTOS_TEST_LLM_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Secrets(); len(s) != 1 || s[0] != "sk-client-secret-1" {
		t.Fatalf("Secrets = %q", s)
	}
	t.Setenv("AGENTOS_TEST_LLM_KEY", "")
	if c, _ := New(Config{Model: "m", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "AGENTOS_TEST_LLM_KEY"}); len(c.Secrets()) != 0 {
		t.Fatalf("no key, Secrets = %q", c.Secrets())
	}
}
