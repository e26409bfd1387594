package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/agent"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/pii"
)

// CallTool restores exec_sql's arguments (restore_to "sql") and looks for
// the restored values in the tool's answer and error in every encoding:
// a percent-encoded echo, which no detector sees, comes back as the token.
func TestCallToolMasksRestoredEchoes(t *testing.T) {
	p, err := pii.New(pii.Options{Key: []byte("0123456789abcdef-agent-test"), Detect: []string{pii.Email}, RestoreTo: []string{"sql"}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := p.String("ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	tool := kerneltool.Tool{Name: "exec_sql", Call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		var a struct{ Params []string }
		_ = json.Unmarshal(args, &a)
		got = a.Params[0]
		enc := url.QueryEscape(got)
		if strings.Contains(string(args), "fail") {
			return nil, errors.New("no row for " + enc)
		}
		return json.Marshal(map[string]string{"echo": enc, "upper": strings.ToUpper(enc)})
	}}
	out, err := agent.CallTool(context.Background(), tool, json.RawMessage(`{"sql":"select","params":["`+tok+`"]}`), p)
	if err != nil || got != "ada@example.com" {
		t.Fatalf("the tool got %q; answered %s, %v", got, out, err)
	}
	if strings.Contains(strings.ToLower(string(out)), "ada%40example.com") || strings.Count(string(out), tok) != 2 {
		t.Errorf("answer %s: want the token %s in place of both encoded echoes", out, tok)
	}
	_, err = agent.CallTool(context.Background(), tool, json.RawMessage(`{"sql":"fail","params":["`+tok+`"]}`), p)
	if err == nil || strings.Contains(err.Error(), "%40") || !strings.Contains(err.Error(), tok) {
		t.Errorf("error %v: want the token in place of the encoded value", err)
	}
}
