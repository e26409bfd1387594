package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
)

// A bad pii section fails the load, saying what is wrong.
func TestPIIConfigErrors(t *testing.T) {
	for body, want := range map[string]string{
		`{"pii": {"detect": ["ssn"]}}`:                                        `unknown detector "ssn"`,
		`{"pii": {"patterns": {"iban": "("}}}`:                                `pattern "iban"`,
		`{"pii": {"patterns": {"Bad": "x"}}}`:                                 `pattern name "Bad"`,
		`{"pii": {"patterns": {"any": ".*"}}}`:                                `matches the empty string`,
		`{"pii": {"detect": ["email"], "restore_to": ["fs"]}}`:                `built-in driver`,
		`{"pii": {"detect": ["email"], "restore_to": ["llm"]}}`:               `never receives real values`,
		`{"pii": {"detect": ["email"], "restore_to": ["sql:x"]}}`:             `only fetch`,
		`{"pii": {"restore_to": ["sql"]}}`:                                    `detects nothing`,
		`{"pii": {"detect": ["email"], "map_file": "../m.db"}}`:               `inside the tool root`,
		`{"pii": {"detect": ["email"], "key_env": "1 x"}}`:                    `not an environment variable name`,
		`{"pii": {"detect": ["email"], "key_file": "tools/pii.key"}}`:         `pii.key_file "tools/pii.key" is outside .agentos/, where tools could read it`,
		`{"pii": {"detect": ["email"], "map_file": "pii.db"}}`:                `put it under .agentos/, e.g. ".agentos/pii.db"`,
		`{"pii": {"detect": ["email"], "map_file": ".agentos"}}`:              `pii.map_file ".agentos" is outside .agentos/`,
		`{"pii": {"detect": ["email"], "key_file": ".agentos/../k"}}`:         `pii.key_file ".agentos/../k" is outside .agentos/`,
		`{"pii": {"detect": ["email"], "map_file": "tools/.agentos-x/m.db"}}`: `is outside .agentos/`,
		`{"pii": {"detect": ["email"], "bogus": 1}}`:                          `bogus`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, host.ConfigFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := host.LoadConfig(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", body, err, want)
		}
	}
}

// The key is made once (0600) and kept; one readable by others is
// refused; the names file adds names; key_env overrides the file.
func TestOpenPII(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "names.txt"), []byte("# staff\nGrace Hopper\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := host.Config{PII: host.PIIConfig{Detect: []string{"email"}, NamesFile: "names.txt"}}
	tk, m, err := cfg.OpenPII(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tk.String("Grace Hopper <grace@navy.example>")
	if err != nil || strings.Contains(out, "Grace") || strings.Contains(out, "grace@") {
		t.Fatalf("names_file and email: %q, %v", out, err)
	}
	if err := m.Close(); err != nil { // the map is held by one opener at a time
		t.Fatal(err)
	}
	tk2, m2, err := cfg.OpenPII(root)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if out2, err := tk2.String("Grace Hopper <grace@navy.example>"); out2 != out {
		t.Fatalf("a second open tokenizes as %q (%v), the first as %q: the key was not kept", out2, err, out)
	}
	key := filepath.Join(root, host.PIIKeyFile)
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.OpenPII(root); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key readable by others: %v", err)
	}
	t.Setenv("AGENTOS_TEST_PII_KEY", strings.Repeat("ab", 32))
	cfg.PII.KeyEnv = "AGENTOS_TEST_PII_KEY"
	tk3, m3, err := cfg.OpenPII(root)
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if out3 := tk3.Token("email", "grace@navy.example"); strings.Contains(out, out3) {
		t.Fatalf("key_env gave the key file's token %q", out3)
	}
	if tk, _, err := (host.Config{}).OpenPII(root); tk != nil || err != nil {
		t.Fatalf("an empty pii section: %v, %v; want off", tk, err)
	}
}

// Review 14 item 14: a key or map file outside .agentos/ is refused even
// for a Config built in code, before any file is made.
func TestOpenPIIRefusesFilesToolsCanRead(t *testing.T) {
	root := t.TempDir()
	for _, p := range []host.PIIConfig{
		{Detect: []string{"email"}, KeyFile: "tools/pii.key"},
		{Detect: []string{"email"}, MapFile: "tools/pii.db"},
	} {
		if _, _, err := (host.Config{PII: p}).OpenPII(root); err == nil || !strings.Contains(err.Error(), "put it under .agentos/") {
			t.Errorf("%+v: %v, want a refusal naming .agentos/", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "tools")); !os.IsNotExist(err) {
		t.Errorf("a refused configuration made files: %v", err)
	}
}
