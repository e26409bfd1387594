package agent

import (
	"strings"
	"testing"

	"github.com/agentos-run/agentos/agent/tournament"
	"github.com/agentos-run/agentos/capability"
)

// The agent and agents sections name the key that is wrong, down to the
// template's and the tournament's.
func TestConfigValidate(t *testing.T) {
	off := false
	for _, tc := range []struct {
		err  error
		want string
	}{
		{DefaultProcess{Quota: capability.Quota{"tool_calls": -1}}.Validate(), "agent.quota.tool_calls must not be negative"},
		{DefaultProcess{Grants: []capability.Grant{{Right: "sudo"}}}.Validate(), `agent.grants has an unknown right "sudo"`},
		{Config{PersonasDir: "."}.Validate(), `agents.personas_dir "." must be a directory inside the tool root`},
		{Config{PersonasDir: "../p"}.Validate(), `agents.personas_dir "../p" must be a directory inside the tool root`},
		{Config{Persona: "Bad Name"}.Validate(), `agents.persona "Bad Name"`},
		{Config{Templates: map[string]Template{"Bad Name": {}}}.Validate(), "agents.templates: template"},
		{Config{Templates: map[string]Template{"t": {Persona: "x y"}}}.Validate(), `agents.templates.t.persona "x y"`},
		{Config{Templates: map[string]Template{"t": {Grants: []capability.Grant{{Right: "root"}}}}}.Validate(), `agents.templates.t.grants has an unknown right "root"`},
		{Config{Templates: map[string]Template{"t": {Quota: capability.Quota{"x": 1}}}}.Validate(), `agents.templates.t.quota has an unknown meter "x"`},
		{Config{Templates: map[string]Template{"t": {MaxSteps: -1}}}.Validate(), "agents.templates.t.max_steps -1 must be positive (0: 20)"},
		{Config{Tournament: tournament.Config{Variants: 21}}.Validate(), "agents.tournament.variants 21: use 1 to 20"},
		{Config{Tournament: tournament.Config{Margin: -1}}.Validate(), "agents.tournament.margin -1 must not be negative"},
		{Config{Tournament: tournament.Config{MaxTokens: -1}}.Validate(), "agents.tournament.max_tokens -1 must be positive"},
		{Config{Tournament: tournament.Config{Quota: capability.Quota{"usd": 1}}}.Validate(), `agents.tournament.quota has an unknown meter "usd"`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%v, want %q", tc.err, tc.want)
		}
	}
	c := Config{PersonasDir: "p/", Templates: map[string]Template{"b": {}, "a": {}}, ApprovePersonas: &off}
	if err := c.Validate(); err != nil || c.Personas() != "p" || c.PersonaApproval() || strings.Join(c.TemplateNames(), ",") != "a,b" {
		t.Fatalf("%v %q %v %v", err, c.Personas(), c.PersonaApproval(), c.TemplateNames())
	}
	if (Config{}).Personas() != "personas" || !(Config{}).PersonaApproval() {
		t.Fatal("the defaults")
	}
}
