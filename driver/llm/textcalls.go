package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// Call forms: how the model wrote the tool calls of a Response
// (Response.CallForm). Many servers started without a tool-call template,
// and many small models, write their calls as text instead of the API's
// tool_calls field; the client reads the common forms back into
// Message.ToolCalls (Config.TextToolCalls) and says which it read, so that
// the journal shows it.
const (
	// FormAPI: the server's tool_calls field.
	FormAPI = "api"
	// FormHermes: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
	// (Hermes, Qwen 2.5 and 3, and servers without a tool-call parser).
	FormHermes = "hermes"
	// FormMistral: [TOOL_CALLS] [{"name": ..., "arguments": {...}}], or
	// [TOOL_CALLS]name[ARGS]{...} (Mistral's v11 tokenizer).
	FormMistral = "mistral"
	// FormJSON: a JSON object (or array of them) {"name": ...,
	// "arguments"|"parameters": {...}}, alone, after <|python_tag|>, or in a
	// fenced code block (Llama 3.x, prose answers).
	FormJSON = "json"
)

var (
	hermesCall  = lazyre.New(`(?s)<tool_call>\s*(.*?)\s*(?:</tool_call>|$)`)
	fencedBlock = lazyre.New("(?s)```[a-zA-Z0-9_-]*[ \t]*\n(.*?)\n?```")
	mistralArgs = lazyre.New(`(?s)\[TOOL_CALLS\]\s*([A-Za-z0-9_.-]+)\s*\[ARGS\]\s*(.*)`)
)

// textCall is one call as a model writes it in text.
type textCall struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
	Function   *textCall       `json:"function"`
}

// normalize completes resp for the conversation's next request: tool calls
// the model wrote as text become Message.ToolCalls (when text is true and
// the request offered tools), every call gets an id (some servers send
// none: a synthetic, deterministic one), and CallForm says where the calls
// came from.
func normalize(resp *Response, tools []ToolSpec, text bool) {
	m := &resp.Message
	if len(m.ToolCalls) > 0 {
		resp.CallForm = FormAPI
	} else if text && len(tools) > 0 {
		calls, form, rest := parseTextCalls(m.Content, tools)
		if len(calls) > 0 {
			m.ToolCalls, m.Content, resp.CallForm = calls, rest, form
		}
	}
	for i := range m.ToolCalls {
		if m.ToolCalls[i].ID == "" {
			m.ToolCalls[i].ID = syntheticID(m.ToolCalls[i], i)
		}
	}
}

// syntheticID names a call that came without an id: the same call at the
// same place always gets the same id, so that a replayed run sends the same.
func syntheticID(tc ToolCall, i int) string {
	h := sha256.Sum256([]byte(tc.Name + "\x00" + tc.Arguments))
	return "call_agentos_" + hex.EncodeToString(h[:6]) + "_" + strconv.Itoa(i)
}

// parseTextCalls finds tool calls written as text in content, naming only
// tools of the request (a JSON answer that names no offered tool is an
// answer, not a call). It returns the calls, their form, and the content
// without them.
func parseTextCalls(content string, tools []ToolSpec) ([]ToolCall, string, string) {
	known := map[string]bool{}
	for _, t := range tools {
		known[t.Name] = true
	}
	s := strings.TrimSpace(content)
	if ms := hermesCall().FindAllStringSubmatchIndex(s, -1); len(ms) > 0 {
		var calls []ToolCall
		for _, m := range ms {
			calls = append(calls, decodeCalls([]byte(s[m[2]:m[3]]), known)...)
		}
		if len(calls) > 0 {
			return calls, FormHermes, strings.TrimSpace(hermesCall().ReplaceAllString(s, ""))
		}
	}
	if i := strings.Index(s, "[TOOL_CALLS]"); i >= 0 {
		if m := mistralArgs().FindStringSubmatch(s[i:]); m != nil && known[m[1]] {
			if args := firstJSON(m[2]); args != nil {
				return []ToolCall{{Name: m[1], Arguments: string(args)}}, FormMistral, strings.TrimSpace(s[:i])
			}
		}
		if calls := decodeCalls(firstJSON(s[i+len("[TOOL_CALLS]"):]), known); len(calls) > 0 {
			return calls, FormMistral, strings.TrimSpace(s[:i])
		}
	}
	body := strings.TrimSpace(strings.TrimPrefix(s, "<|python_tag|>"))
	if calls := decodeCalls([]byte(body), known); len(calls) > 0 {
		return calls, FormJSON, ""
	}
	for _, m := range fencedBlock().FindAllStringSubmatchIndex(s, -1) {
		if calls := decodeCalls([]byte(s[m[2]:m[3]]), known); len(calls) > 0 {
			return calls, FormJSON, strings.TrimSpace(s[:m[0]] + s[m[1]:])
		}
	}
	return nil, "", content
}

// firstJSON returns the first JSON value at the start of s, nil if none.
func firstJSON(s string) json.RawMessage {
	var v json.RawMessage
	if json.NewDecoder(strings.NewReader(strings.TrimSpace(s))).Decode(&v) != nil {
		return nil
	}
	return v
}

// decodeCalls reads b as one call object or an array of them; a call naming
// a tool not in known, or b not of that shape, yields nothing.
func decodeCalls(b []byte, known map[string]bool) []ToolCall {
	b = bytes.TrimSpace(b)
	var list []textCall
	if len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &list) != nil {
			return nil
		}
	} else {
		var one textCall
		if json.Unmarshal(b, &one) != nil {
			return nil
		}
		list = []textCall{one}
	}
	out := make([]ToolCall, 0, len(list))
	for _, c := range list {
		if c.Function != nil && c.Name == "" {
			c = *c.Function
		}
		if !known[c.Name] {
			return nil
		}
		args := c.Arguments
		if len(args) == 0 {
			args = c.Parameters
		}
		out = append(out, ToolCall{Name: c.Name, Arguments: argumentText(args)})
	}
	return out
}

// argumentText is a call's arguments as the API carries them: JSON text. A
// model MAY write them as an object or as a string holding JSON.
func argumentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return "{}"
	}
	return string(raw)
}
