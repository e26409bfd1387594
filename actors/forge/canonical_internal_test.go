package forge

import (
	"testing"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/journal"
)

// The forge's own requests and answers (and submit_tool's schema, part of
// every model request) are in the journal's canonical form as encoded, so
// that the journal records them as they come. Every field is set, with
// characters json.Marshal would escape (a field added later must be set
// here too).
func TestForgeCallsAreCanonical(t *testing.T) {
	for name, v := range map[string]any{
		"candidate":      candidate{Path: "tools/a.ts", Code: "a < b && c > d", Tests: "<t>"},
		"takenRequest":   takenRequest{Path: "tools/a.ts", Hash: "h"},
		"takenAnswer":    takenAnswer{Taken: true, Description: "<a> & <b>"},
		"testOutcome":    testOutcome{Passed: false, Error: "1 < 2", Logs: []string{"<log>"}},
		"lessonsRequest": lessonsRequest{Agents: []string{"a"}, Query: "q", Limit: 4},
		"submit_tool":    submitTool,
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
