package host

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/config"
	"github.com/agentos-run/agentos/persona"
)

// AgentsConfig configures the agents the runtime spawns: their personas
// (named, versioned system prompts kept in the tool root), the templates
// the nursery spawns them from, and prompt tournaments (docs/MEMORY.md).
type AgentsConfig struct {
	// PersonasDir is the directory of the personas under the tool root.
	// Default "personas".
	PersonasDir string `json:"personas_dir,omitempty"`
	// Persona is the persona of an agent started without one ("name" or
	// "name@version"). Default: none (the built-in protocol prompt).
	Persona string `json:"persona,omitempty"`
	// Templates are the agents the nursery spawns by name (agentos spawn
	// TEMPLATE, Runtime.Spawn). Default: none.
	Templates map[string]AgentTemplate `json:"templates,omitempty"`
	// Tournament configures prompt tournaments (agentos tournament).
	Tournament TournamentConfig `json:"tournament,omitzero"`
	// ApprovePersonas holds a persona version this node did not save (one
	// pulled from the upstream, or edited into the file by hand) for
	// approval before an agent uses it: the agent uses the persona's last
	// approved version meanwhile (governance/personagate). Default true; false
	// trusts every version in the working tree.
	ApprovePersonas *bool `json:"approve_personas,omitempty"`
}

// PersonaApproval reports whether persona versions are held for approval
// (agents.approve_personas, default true).
func (c AgentsConfig) PersonaApproval() bool {
	return c.ApprovePersonas == nil || *c.ApprovePersonas
}

// AgentTemplate is an agent the nursery spawns by name.
type AgentTemplate struct {
	// Description says what the agent is for (agentos spawn --list).
	Description string `json:"description,omitempty"`
	// Persona is its system prompt ("name" or "name@version"). Default:
	// agents.persona.
	Persona string `json:"persona,omitempty"`
	// Grants are its rights. They are delegated from the spawner's token
	// and MUST NOT exceed the spawner's: a spawn asking for more fails.
	// Default: the spawner's grants. The llm right is added when missing.
	Grants []capability.Grant `json:"grants,omitempty"`
	// Quota limits it (meters as quota); its spending is also charged to
	// the spawner. Default: only the spawner's limits apply.
	Quota map[string]float64 `json:"quota,omitempty"`
	// Tools names the kernel tools it is given. Default: all of them.
	Tools []string `json:"tools,omitempty"`
	// MaxSteps bounds its model requests. Default 20.
	MaxSteps int `json:"max_steps,omitempty"`
}

// TournamentConfig configures prompt tournaments.
type TournamentConfig struct {
	// Variants is how many variants the model writes. Default 3.
	Variants int `json:"variants,omitempty"`
	// Margin is how much fitter than the baseline a variant must be to
	// become the persona's new version. Default 0 (any improvement).
	Margin float64 `json:"margin,omitempty"`
	// Weights weigh the metered fitness. Default: score 1000, tokens
	// 0.001, usd 10, seconds 1.
	Weights persona.Weights `json:"weights,omitzero"`
	// Quota limits each tournament's process (meters as quota). Default:
	// only the default process's limits apply.
	Quota map[string]float64 `json:"quota,omitempty"`
	// MaxTokens bounds each evaluation answer. Default: the model server's.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Personas returns the personas directory (default "personas").
func (c AgentsConfig) Personas() string {
	if c.PersonasDir == "" {
		return persona.DefaultDir
	}
	return filepath.ToSlash(filepath.Clean(c.PersonasDir))
}

// TemplateNames returns the templates' names, sorted.
func (c AgentsConfig) TemplateNames() []string {
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate checks the agents section, naming the key that is wrong.
func (c AgentsConfig) Validate() error {
	if d := c.PersonasDir; d != "" && (!config.InsideRoot(d) || filepath.Clean(d) == ".") {
		return fmt.Errorf("agents.personas_dir %q must be a directory inside the tool root, written relative to it (default \"personas\")", d)
	}
	if c.Persona != "" {
		if name, _ := persona.SplitRef(c.Persona); persona.CheckName(name) != nil {
			return fmt.Errorf("agents.persona %q: %v", c.Persona, persona.CheckName(name))
		}
	}
	for _, n := range c.TemplateNames() {
		t := c.Templates[n]
		if err := persona.CheckName(n); err != nil {
			return fmt.Errorf("agents.templates: template %v", err)
		}
		if t.Persona != "" {
			if name, _ := persona.SplitRef(t.Persona); persona.CheckName(name) != nil {
				return fmt.Errorf("agents.templates.%s.persona %q: %v", n, t.Persona, persona.CheckName(name))
			}
		}
		for _, g := range t.Grants {
			if !slices.Contains(allRights, g.Right) {
				return fmt.Errorf("agents.templates.%s.grants has an unknown right %q: use one of %v", n, g.Right, allRights)
			}
		}
		if _, err := quotaLimits("agents.templates."+n+".quota", t.Quota); err != nil {
			return err
		}
		if t.MaxSteps < 0 {
			return fmt.Errorf("agents.templates.%s.max_steps %d must be positive (0: 20)", n, t.MaxSteps)
		}
	}
	tc := c.Tournament
	if tc.Variants < 0 || tc.Variants > 20 {
		return fmt.Errorf("agents.tournament.variants %d: use 1 to 20 (0: 3)", tc.Variants)
	}
	if tc.Margin < 0 {
		return fmt.Errorf("agents.tournament.margin %g must not be negative", tc.Margin)
	}
	if w := tc.Weights; w.Score < 0 || w.Tokens < 0 || w.USD < 0 || w.Seconds < 0 {
		return fmt.Errorf("agents.tournament.weights must not be negative")
	}
	if tc.MaxTokens < 0 {
		return fmt.Errorf("agents.tournament.max_tokens %d must be positive (0: the server's default)", tc.MaxTokens)
	}
	if _, err := quotaLimits("agents.tournament.quota", tc.Quota); err != nil {
		return err
	}
	return nil
}
