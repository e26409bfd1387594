package driver

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as a call's request or answer is best handed to the
// journal: as json.Marshal does, but without escaping <, > and & (a
// tool's source is full of them). A value whose JSON keys come in sorted
// order (a map, or a struct whose fields are declared in the order of
// their JSON names) is then already in the journal's canonical form
// (journal.Canonical) and is stored as it comes, without being decoded
// and encoded again.
func Marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
