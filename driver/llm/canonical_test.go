package llm_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/journal"
)

// The wire types' fields are declared in the order of their JSON names, so
// that a request and an answer, encoded with driver.Marshal, are already
// in the journal's canonical form (recorded as they come, not decoded and
// encoded again). Every field's JSON name is checked to come after the
// one before it (a field added out of order fails here), and a value with
// every field set, with the characters json.Marshal would escape, must
// encode canonically.
func TestWireTypesAreCanonical(t *testing.T) {
	for _, v := range []any{llm.Message{}, llm.ToolCall{}, llm.ToolSpec{}, llm.Request{}, llm.Response{}, llm.Usage{}} {
		typ, prev := reflect.TypeOf(v), ""
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name <= prev {
				t.Errorf("%s.%s (%q) is declared after %q: declare the fields in the order of their JSON names", typ.Name(), typ.Field(i).Name, name, prev)
			}
			prev = name
		}
	}
	temp := 0.5
	call := llm.ToolCall{ID: "c1", Name: "submit_tool", Arguments: `{"code":"a < b && c > d"}`}
	msg := llm.Message{Role: llm.RoleAssistant, Content: "if (a < b) {}", ToolCalls: []llm.ToolCall{call}, ToolCallID: "c0", Name: "forge"}
	for name, v := range map[string]any{
		"Request": llm.Request{
			Messages:    []llm.Message{msg, {Role: llm.RoleUser, Content: "x"}},
			Tools:       []llm.ToolSpec{{Name: "submit_tool", Description: "<tools>", Parameters: json.RawMessage(`{"type":"object"}`)}},
			Temperature: &temp,
			MaxTokens:   64,
		},
		"Response": llm.Response{Message: msg, FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, CostUSD: 0.25}, CallForm: llm.FormAPI},
	} {
		b, err := driver.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if c := journal.Canonical(b); string(c) != string(b) {
			t.Errorf("%s is not encoded in canonical form:\n got %s\nwant %s", name, b, c)
		}
	}
}
