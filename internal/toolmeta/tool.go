package toolmeta

import (
	"encoding/json"
	"time"
)

// Tool is one registered tool, as stored in meta.json.
type Tool struct {
	// Path is relative to the tool root, e.g. tools/math/fib.ts.
	Path string `json:"path"`
	// Name is the file's base name without extension, e.g. fib.
	Name string `json:"name"`
	// Description is the text of the tool's leading JSDoc comment, block
	// tags removed and whitespace collapsed; "" when there is none.
	Description string `json:"description"`
	// Parameters is the JSON Schema (type object) of the default export's
	// first parameter, when its type is an object type the file declares
	// (inline, or as a local interface or type alias). It is nil (omitted)
	// when the parameter or its type is undeclared.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Tags come from the JSDoc's @tag lines ("@tag finance, reports"),
	// lowercased, in order, without duplicates.
	Tags []string `json:"tags,omitempty"`
	// Hash is the content hash of the source (transpile.Hash). Hash,
	// Version, Created and Updated are left out of the JSON of a tool that
	// is not registered (an MCP server's tool in a search's hits).
	Hash string `json:"hash,omitempty"`
	// Version is 1 when the tool is first registered and grows by one each
	// time its hash changes.
	Version int `json:"version,omitempty"`
	// Usage counts the tool's uses (Used).
	Usage int `json:"usage"`
	// Created is when the tool was first registered, Updated when its hash
	// last changed (UTC).
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
}

// Hit is one search result.
type Hit struct {
	Tool
	// Score is how much of the query the tool covers, 0..1 (see Search).
	Score float64 `json:"score"`
}

// DefaultLimit is the number of hits a search returns for limit <= 0.
const DefaultLimit = 10

// Clone returns a copy of t sharing no slice with it.
func (t *Tool) Clone() Tool {
	c := *t
	if t.Tags != nil {
		c.Tags = append([]string(nil), t.Tags...)
	}
	if t.Parameters != nil {
		c.Parameters = append(json.RawMessage(nil), t.Parameters...)
	}
	return c
}
