package executor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/mcpdriver"
)

// An upstream server's resources and prompts are checked against the mcp
// right like its tools: a grant on one tool reaches neither; a grant on
// the server, or on that very resource or prompt, does (issue 29 item 2).
func TestMCPResourceAndPromptRights(t *testing.T) {
	calls := []driver.Call{
		{Driver: mcpdriver.Name, Op: mcpdriver.OpReadResource, Request: json.RawMessage(`{"server":"tracker","uri":"tracker://readme"}`)},
		{Driver: mcpdriver.Name, Op: mcpdriver.OpGetPrompt, Request: json.RawMessage(`{"server":"tracker","prompt":"triage"}`)},
	}
	for _, tc := range []struct {
		scope string
		want  []bool
	}{
		{"tracker/create_issue", []bool{false, false}},
		{"other/", []bool{false, false}},
		{"tracker/", []bool{true, true}},
		{"tracker/resource:tracker://readme", []bool{true, false}},
		{"tracker/prompt:triage", []bool{false, true}},
	} {
		grants := []capability.Grant{{Right: capability.MCP, Scope: tc.scope}}
		check := func(r capability.Right, res string) error {
			if capability.GrantsCover(grants, r, res) {
				return nil
			}
			return capability.ErrDenied
		}
		host := checkDrivers(check)(driver.HostFunc(func(context.Context, driver.Call) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }))
		for i, c := range calls {
			_, err := host.Do(context.Background(), c)
			var de *driver.Error
			if got := err == nil; got != tc.want[i] || (err != nil && (!errors.As(err, &de) || de.Code != driver.CodeSecurity)) {
				t.Errorf("grant %q, %s: %v, want allowed %v (refused with code security)", tc.scope, c.Op, err, tc.want[i])
			}
		}
	}
}
