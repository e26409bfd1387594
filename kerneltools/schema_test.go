package kerneltools

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/kerneltool"
)

// goldenSchemas are the kernel tools' JSON Schemas as they were written by
// hand before the argument structs became their one source: the generated
// schemas MUST stay equivalent to them (an LLM sees exactly these).
var goldenSchemas = map[string]string{
	"list_files":   `{"type":"object","properties":{"dir":{"type":"string","description":"Directory relative to the tool root, e.g. tools or tools/math; /mcp lists the MCP servers, /mcp/<server> their tools' modules."}},"required":["dir"],"additionalProperties":false}`,
	"read_file":    `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the tool root, e.g. tools/math/fib.ts, or an MCP tool's module /mcp/<server>/<tool>.ts."}},"required":["path"],"additionalProperties":false}`,
	"write_file":   `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the tool root."},"content":{"type":"string","description":"The whole new content."}},"required":["path","content"],"additionalProperties":false}`,
	"patch_file":   `{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the tool root."},"search":{"type":"string","description":"Exact text to replace (first occurrence)."},"replace":{"type":"string","description":"Replacement text."}},"required":["path","search","replace"],"additionalProperties":false}`,
	"check_tool":   `{"type":"object","properties":{"path":{"type":"string","description":"Tool path relative to the tool root."}},"required":["path"],"additionalProperties":false}`,
	"exec_sql":     `{"type":"object","properties":{"sql":{"type":"string","description":"Exactly one statement, e.g. SELECT name FROM users WHERE plan = ?"},"params":{"type":["array","object"],"description":"Values for the placeholders: an array in order (? or $1), or an object by name (:name, SQLite only)."}},"required":["sql"],"additionalProperties":false}`,
	"search_tools": `{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, in words, e.g. compound interest calculator."},"limit":{"type":"integer","minimum":1,"maximum":100,"description":"How many results at most (default 10)."},"detail":{"type":"string","enum":["full","brief"],"description":"'full' (default): each result with its parameters' JSON Schema, tags and usage; 'brief': only path, name, a one-line summary and score (read_file the path for the rest)."}},"required":["query"],"additionalProperties":false}`,
	"forge_tool":   `{"type":"object","properties":{"spec":{"type":"string","description":"What the tool must do: inputs, output, edge cases."}},"required":["spec"],"additionalProperties":false}`,
	"exec_tool":    `{"type":"object","properties":{"path":{"type":"string","description":"Tool path relative to the tool root, e.g. tools/x.ts; tools/x.ts@<hash> (at least 8 hex digits of a recorded content hash) runs that recorded version."},"args":{"type":"object","description":"The object passed to the tool's default export."},"placement":{"type":"string","description":"In a cluster: where the run executes: 'local' (this node), 'spread' (another node when this one is busy), or a node's address. Default: this node unless it is saturated."}},"required":["path"],"additionalProperties":false}`,
	"remember":     `{"type":"object","properties":{"text":{"type":"string","description":"What to remember, in a sentence or a few: a fact, a lesson learnt or a preference."},"kind":{"type":"string","description":"fact (default), lesson or preference.","enum":["fact","lesson","preference"]},"tags":{"type":"array","items":{"type":"string"},"description":"Labels to find it by, e.g. [\"billing\", \"customer-42\"]."}},"required":["text"],"additionalProperties":false}`,
	"recall":       `{"type":"object","properties":{"query":{"type":"string","description":"What to recall, in words: a name, a value, a topic."},"limit":{"type":"integer","description":"How many items at most (default 5).","minimum":1,"maximum":100},"kind":{"type":"string","description":"Only this kind: fact, lesson, preference, or page (turns paged out of your context). Default: every kind.","enum":["fact","lesson","preference","page"]},"agent":{"type":"string","description":"Whose memory: another agent's name (needs the memory_read right on it). Default: your own."}},"required":["query"],"additionalProperties":false}`,
	"forget":       `{"type":"object","properties":{"id":{"type":"string","description":"The id of one of your items, as remember or recall gave it."}},"required":["id"],"additionalProperties":false}`,
}

// Every tool's schema, generated from its argument struct, is the one it
// had when it was a string literal: same properties, types, required,
// descriptions, bounds, additionalProperties; compared as JSON values, not
// text.
func TestToolSchemasAreTheGolden(t *testing.T) {
	deriveSchemas()
	if len(toolDefs) != len(goldenSchemas) {
		t.Errorf("%d tools, %d golden schemas: a tool added needs its golden schema here", len(toolDefs), len(goldenSchemas))
	}
	for _, d := range toolDefs {
		want, ok := goldenSchemas[d.name]
		if !ok {
			t.Errorf("%s: no golden schema", d.name)
			continue
		}
		var got, golden any
		if err := json.Unmarshal(d.schema, &got); err != nil {
			t.Fatalf("%s: generated schema %s: %v", d.name, d.schema, err)
		}
		if err := json.Unmarshal([]byte(want), &golden); err != nil {
			t.Fatalf("%s: golden schema: %v", d.name, err)
		}
		if !reflect.DeepEqual(got, golden) {
			t.Errorf("%s: generated schema\n %s\nwant (golden)\n %s", d.name, d.schema, want)
		}
		// The properties come in the struct's order (what an LLM reads).
		var order struct {
			Properties json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(d.schema, &order)
		if gp, wp := propertyOrder(t, order.Properties), propertyOrder(t, json.RawMessage(goldenProperties(t, want))); !slices.Equal(gp, wp) {
			t.Errorf("%s: properties in order %v, want %v", d.name, gp, wp)
		}
	}
}

func goldenProperties(t *testing.T, schema string) []byte {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties
}

// propertyOrder lists an object's keys in the order they are written.
func propertyOrder(t *testing.T, obj json.RawMessage) []string {
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// decode's parameter list and required parameters are the argument
// struct's: a missing required parameter, an unknown one and a non-object
// are refused naming the parameters, an optional one may be left out.
func TestDecodeFollowsTheArgumentStruct(t *testing.T) {
	deriveSchemas()
	for _, d := range toolDefs {
		var props map[string]any
		var s struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(d.schema, &s); err != nil {
			t.Fatal(err)
		}
		props = s.Properties
		if got := strings.Split(d.params, ", "); len(got) != len(props) {
			t.Errorf("%s: params %q, properties %v", d.name, d.params, props)
		}
		if !slices.Equal(d.required, s.Required) {
			t.Errorf("%s: required %v, schema's %v", d.name, d.required, s.Required)
		}
	}
	var e execToolArgs
	err := decode(json.RawMessage(`{"args":{}}`), &e)
	if !errors.Is(err, kerneltool.ErrInvalidArgs) || !strings.Contains(err.Error(), `missing parameter "path" (parameters: path, args, placement)`) {
		t.Errorf("exec_tool without path: %v", err)
	}
	if err := decode(json.RawMessage(`{"path":"tools/a.ts"}`), &e); err != nil || e.Path != "tools/a.ts" {
		t.Errorf("exec_tool without args (optional): %+v %v", e, err)
	}
	err = decode(json.RawMessage(`{"path":"a","argz":{}}`), &e)
	if !errors.Is(err, kerneltool.ErrInvalidArgs) || !strings.Contains(err.Error(), `unknown field "argz"`) || !strings.Contains(err.Error(), "(parameters: path, args, placement)") {
		t.Errorf("exec_tool with an unknown parameter: %v", err)
	}
	var p patchFileArgs
	err = decode(json.RawMessage(`[1]`), &p)
	if !errors.Is(err, kerneltool.ErrInvalidArgs) || !strings.Contains(err.Error(), "a JSON object with path, search, replace") {
		t.Errorf("patch_file with an array: %v", err)
	}
	var q execSQLArgs
	if err := decode(json.RawMessage(`{"sql":"SELECT ?","params":[1, "a"]}`), &q); err != nil || string(q.Params) != `[1, "a"]` {
		t.Errorf("exec_sql params kept as written: %q %v", q.Params, err)
	}
	var notArgs struct{ X int }
	if err := decode(json.RawMessage(`{}`), &notArgs); err == nil || !strings.Contains(err.Error(), "toolDefs") {
		t.Errorf("a struct of no tool: %v", err)
	}
}
