package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentos-run/agentos/driver"
)

// Every device of the setup is wrapped, whatever its name: an "mcp"
// device added beside fetch and sql (as the mcp driver is) gets its
// responses tokenized and, for the server and tool restore_to names, its
// requests restored; another server gets the tokens.
func TestExecutorSetupWrapsEveryDevice(t *testing.T) {
	root := t.TempDir()
	cfg := Config{PII: PIIConfig{Detect: []string{"email"}, RestoreTo: []string{"mcp:crm/send_email"}}}
	var mu sync.Mutex
	var seen []string
	mcp := driver.DeviceFunc(func(_ context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, string(req))
		mu.Unlock()
		return json.RawMessage(`{"content":[{"type":"text","text":"owner: ada@example.com"}]}`), nil
	})
	s := &ExecutorSetup{Options: cfg.ExecutorOptions(root)}
	s.Options.Devices["mcp"] = mcp
	var err error
	if s.PII, s.piiMap, err = cfg.OpenPII(root); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.wrapPII()
	dev := s.Options.Devices["mcp"]
	out, err := dev.Do(context.Background(), "call", json.RawMessage(`{"server":"crm","tool":"lookup","args":{}}`))
	if err != nil || strings.Contains(string(out), "ada@") || !strings.Contains(string(out), "PII_EMAIL_") {
		t.Fatalf("the mcp device answered %s, %v; want the address tokenized", out, err)
	}
	tok := s.PII.Token("email", "ada@example.com")
	for _, tool := range []string{"send_email", "lookup"} {
		if _, err := dev.Do(context.Background(), "call", json.RawMessage(`{"server":"crm","tool":"`+tool+`","args":{"to":"`+tok+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if want := `{"server":"crm","tool":"send_email","args":{"to":"ada@example.com"}}`; seen[1] != want {
		t.Errorf("crm/send_email (in restore_to) received %s, want %s", seen[1], want)
	}
	if !strings.Contains(seen[2], tok) {
		t.Errorf("crm/lookup (not in restore_to) received %s, want the token", seen[2])
	}
	if _, ok := s.Options.Devices[driver.FetchDriver].(driver.Fetch); ok {
		t.Error("the fetch device is not wrapped")
	}
}
