package forge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/internal/samples"
	"github.com/agentos-run/agentos/pii"
)

// With PII on, what the forge feeds its model is tokenized: the spec, and
// a failing test's output holding an e-mail address it computed itself;
// the journal records the tokens only.
func TestForgeTokenizesWhatReachesTheModel(t *testing.T) {
	tk, err := pii.New(pii.Options{Key: []byte("forge-test-key-of-16+bytes"), Detect: []string{pii.Email}})
	if err != nil {
		t.Fatal(err)
	}
	const spec, failing = "the n-th Fibonacci number; report errors to grace@navy.example", "ada@example.com"
	// The test builds the address at run time: only its output holds it.
	tests := strings.Replace(samples.FibForgedTests, `throw new Error("fib(" + n + ") = " + got + ", want " + want);`,
		`throw new Error("fib(" + n + ") = " + got + ", want " + want + "; mail ada" + String.fromCharCode(64) + "example.com");`, 1)
	if tests == samples.FibForgedTests {
		t.Fatal("the sample tests changed: update the replacement")
	}
	args, _ := json.Marshal(map[string]string{"path": "tools/math/fib.ts", "code": buggyCode, "tests": tests})
	first := llmtest.Step{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "submit_tool", Arguments: string(args)}}}
	second := submit(fibCode)
	second.Check = func(r llmtest.Received) error {
		last := r.Messages[len(r.Messages)-1]
		if !strings.Contains(last.Content, "fib(0) = 1, want 0; mail "+tk.Token(pii.Email, failing)) {
			return fmt.Errorf("the failure reached the model as %q, want the address as its token", last.Content)
		}
		return nil
	}
	srv := llmtest.NewServer([]llmtest.Step{first, second})
	defer srv.Close()
	root := t.TempDir()
	e := newEnvWith(t, srv, root, envOptions{pii: tk})
	if _, err := e.f.Forge(context.Background(), spec, nil); err != nil || srv.Err() != nil {
		t.Fatalf("%v; model: %v", err, srv.Err())
	}
	for i, r := range srv.Received() {
		for _, v := range []string{failing, "grace@navy.example"} {
			if bytes.Contains(r.Raw, []byte(v)) {
				t.Errorf("model request %d holds %q", i+1, v)
			}
		}
	}
	if got := srv.Received()[0].Messages[1].Content; !strings.Contains(got, tk.Token(pii.Email, "grace@navy.example")) {
		t.Errorf("the spec reached the model as %q", got)
	}
	jb, err := os.ReadFile(filepath.Join(root, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{failing, "grace@navy.example"} {
		if bytes.Contains(jb, []byte(v)) {
			t.Errorf("the journal holds %q", v)
		}
	}
}
