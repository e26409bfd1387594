package agent

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/agentos-run/agentos/agent/tournament"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/config"
	"github.com/agentos-run/agentos/persona"
)

// DefaultProcess is the "agent" section of agentos.json: the default
// process, the one `agentos call` and Runtime.Tools run as. The zero
// value: the composition root's default grants (read, write and exec on
// the tools directory, spawn, ...) and the node's quota.
type DefaultProcess struct {
	// Grants are its rights. Default: read, write and exec on the tools
	// directory, and spawn.
	Grants []capability.Grant `json:"grants,omitempty"`
	// Quota limits it, like the top-level quota. Default: the node's.
	Quota capability.Quota `json:"quota,omitempty"`
}

// Validate checks the section, naming the key that is wrong.
func (d DefaultProcess) Validate() error {
	if _, err := d.Quota.Limits("agent.quota"); err != nil {
		return err
	}
	return capability.CheckGrants("agent.grants", d.Grants)
}

// Config is the "agents" section of agentos.json: the agents the runtime
// spawns, their personas (named, versioned system prompts kept in the tool
// root), the templates the nursery spawns them from, and prompt
// tournaments (docs/MEMORY.md). The zero value: personas under
// "personas", no default persona, no template, persona versions held for
// approval.
type Config struct {
	// PersonasDir is the directory of the personas under the tool root.
	// Default "personas".
	PersonasDir string `json:"personas_dir,omitempty"`
	// Persona is the persona of an agent started without one ("name" or
	// "name@version"). Default: none (the built-in protocol prompt).
	Persona string `json:"persona,omitempty"`
	// Templates are the agents the nursery spawns by name (agentos spawn
	// TEMPLATE, Runtime.Spawn). Default: none.
	Templates map[string]Template `json:"templates,omitempty"`
	// Tournament configures prompt tournaments (agentos tournament).
	Tournament tournament.Config `json:"tournament,omitzero"`
	// ApprovePersonas holds a persona version this node did not save (one
	// pulled from the upstream, or edited into the file by hand) for
	// approval before an agent uses it: the agent uses the persona's last
	// approved version meanwhile (governance/personagate). Default true;
	// false trusts every version in the working tree.
	ApprovePersonas *bool `json:"approve_personas,omitempty"`
}

// Template is an agent the nursery spawns by name (agents.templates).
type Template struct {
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
	Quota capability.Quota `json:"quota,omitempty"`
	// Tools names the kernel tools it is given. Default: all of them.
	Tools []string `json:"tools,omitempty"`
	// MaxSteps bounds its model requests. Default 20.
	MaxSteps int `json:"max_steps,omitempty"`
}

// PersonaApproval reports whether persona versions are held for approval
// (agents.approve_personas, default true).
func (c Config) PersonaApproval() bool {
	return c.ApprovePersonas == nil || *c.ApprovePersonas
}

// Personas returns the personas directory (default "personas").
func (c Config) Personas() string {
	if c.PersonasDir == "" {
		return persona.DefaultDir
	}
	return filepath.ToSlash(filepath.Clean(c.PersonasDir))
}

// TemplateNames returns the templates' names, sorted.
func (c Config) TemplateNames() []string {
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate checks the section, naming the key that is wrong: the personas
// directory and persona, each template in name order, then the
// tournament.
func (c Config) Validate() error {
	if d := c.PersonasDir; d != "" && (!config.InsideRoot(d) || filepath.Clean(d) == ".") {
		return fmt.Errorf("agents.personas_dir %q must be a directory inside the tool root, written relative to it (default \"personas\")", d)
	}
	if err := checkPersona("agents.persona", c.Persona); err != nil {
		return err
	}
	for _, n := range c.TemplateNames() {
		if err := persona.CheckName(n); err != nil {
			return fmt.Errorf("agents.templates: template %v", err)
		}
		if err := c.Templates[n].validate("agents.templates." + n); err != nil {
			return err
		}
	}
	return c.Tournament.Validate()
}

// validate checks the template written at key.
func (t Template) validate(key string) error {
	if err := checkPersona(key+".persona", t.Persona); err != nil {
		return err
	}
	if err := capability.CheckGrants(key+".grants", t.Grants); err != nil {
		return err
	}
	if _, err := t.Quota.Limits(key + ".quota"); err != nil {
		return err
	}
	if t.MaxSteps < 0 {
		return fmt.Errorf("%s.max_steps %d must be positive (0: 20)", key, t.MaxSteps)
	}
	return nil
}

// checkPersona checks a persona reference ("name" or "name@version")
// written at key; "" is none.
func checkPersona(key, ref string) error {
	if ref == "" {
		return nil
	}
	if name, _ := persona.SplitRef(ref); persona.CheckName(name) != nil {
		return fmt.Errorf("%s %q: %v", key, ref, persona.CheckName(name))
	}
	return nil
}
