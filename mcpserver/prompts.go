package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/lazyre"
	"github.com/agentos-run/agentos/persona"
)

// Personas as prompts (docs/MCP.md, "Prompts"): every persona of the tool
// root the client's process may read (the read right on its file,
// personas/<name>.md) is a prompt of the same name. Its arguments are the
// placeholders of its text, {{name}} (required, substituted), then two
// optional ones: task (the user's request, appended after the persona's
// text) and version (a version of the persona, a prefix of its hash,
// completed by completion/complete). Getting one is a kernel call:
// charged, and the read right checked on the persona's file (of the
// version asked, when one is).

// placeholder is a persona's argument in its text: {{name}}.
var placeholder = lazyre.New(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// placeholders are the argument names of text, in order of first use
// (task and version, the prompt's own arguments, excluded).
func placeholders(text string) []string {
	var out []string
	for _, m := range placeholder().FindAllStringSubmatch(text, -1) {
		if n := m[1]; n != "task" && n != "version" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// personaPrompt is the MCP prompt of persona p.
func personaPrompt(p persona.Persona) *mcp.Prompt {
	desc := p.Description
	if desc == "" {
		desc = "The persona " + p.Name + "'s system prompt."
	}
	var args []*mcp.PromptArgument
	for _, n := range placeholders(p.System) {
		args = append(args, &mcp.PromptArgument{Name: n, Required: true, Description: "Replaces {{" + n + "}} in the persona's text."})
	}
	args = append(args,
		&mcp.PromptArgument{Name: "task", Title: "Task", Description: "What to do, sent after the persona's instructions."},
		&mcp.PromptArgument{Name: "version", Title: "Version", Description: "A version of the persona (a prefix of its hash; default: the current one)."})
	return &mcp.Prompt{Name: p.Name, Title: "persona " + p.Name, Description: desc, Arguments: args,
		Meta: mcp.Meta{"agentos/version": p.Version}}
}

// fill substitutes the placeholders of text with args; a missing one is an
// error naming every argument the prompt needs.
func fill(name, text string, args map[string]string) (string, error) {
	var missing []string
	for _, n := range placeholders(text) {
		if _, ok := args[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("prompt %s needs the argument(s) %s (its placeholders: %s)", name, strings.Join(missing, ", "), strings.Join(placeholders(text), ", "))
	}
	return placeholder().ReplaceAllStringFunc(text, func(m string) string {
		n := placeholder().FindStringSubmatch(m)[1]
		if v, ok := args[n]; ok && n != "task" && n != "version" {
			return v
		}
		return m
	}), nil
}

// listPersonas lists the personas (the current version of each), or nil
// when the Server has no persona store or it cannot be read.
func (s *Server) listPersonas() []persona.Persona {
	if s.opts.Personas == nil {
		return nil
	}
	ps, err := s.opts.Personas.List()
	if err != nil {
		s.log.Warn("mcp: listing personas", "err", err)
		return nil
	}
	return ps
}

// personaKey says which personas exist and at which version: it changes
// when one is added, removed or saved anew.
func personaKey(ps []persona.Persona) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Name + "@" + p.Version + "\n")
	}
	return b.String()
}

// syncPromptsLocked offers, as prompts of b, the personas b's process may
// read (s.mu held); a change sends notifications/prompts/list_changed.
func (s *Server) syncPromptsLocked(b *bound) {
	want := map[string]persona.Persona{}
	for _, p := range s.personas {
		if b.p.Covers(capability.Read, s.opts.Personas.CurrentPath(p.Name)) {
			want[p.Name] = p
		}
	}
	var gone []string
	for name := range b.prompts {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(b.prompts, name)
		}
	}
	if len(gone) > 0 {
		b.srv.RemovePrompts(gone...)
	}
	for name, p := range want {
		if b.prompts[name] == p.Version {
			continue
		}
		b.srv.AddPrompt(personaPrompt(p), s.promptHandler(b.p))
		b.prompts[name] = p.Version
	}
}

// readPersona reads the persona ref (name or name@version) as p: a kernel
// call, refused unless p may read the persona's file.
func (s *Server) readPersona(ctx context.Context, p proc.Process, name, version string) (persona.Persona, error) {
	if err := kernelRead(ctx, p); err != nil {
		return persona.Persona{}, err
	}
	if err := persona.CheckName(name); err != nil {
		return persona.Persona{}, err
	}
	// The current file first: without it the persona does not exist for
	// p, and the store's "not found" (which lists every persona) is not
	// shown to a process that may not read them.
	if err := permitRead(p, s.opts.Personas.CurrentPath(name)); err != nil {
		return persona.Persona{}, err
	}
	ref := name
	if version != "" {
		ref += "@" + version
	}
	got, err := s.opts.Personas.Get(ref)
	if err != nil {
		return persona.Persona{}, err
	}
	if version != "" && got.Version != s.currentVersion(name) {
		// An older version is its own file: read where it is kept.
		if err := p.Check(capability.Read, s.opts.Personas.VersionPath(name, got.Version)); err != nil {
			return persona.Persona{}, err
		}
	}
	return got, nil
}

// currentVersion is the current version of persona name ("" if unknown).
func (s *Server) currentVersion(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.personas {
		if p.Name == name {
			return p.Version
		}
	}
	return ""
}

// promptHandler gets a persona prompt as p.
func (s *Server) promptHandler(p proc.Process) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		got, err := s.readPersona(ctx, p, req.Params.Name, args["version"])
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", req.Params.Name, err)
		}
		text, err := fill(got.Name, got.System, args)
		if err != nil {
			return nil, err
		}
		if task := strings.TrimSpace(args["task"]); task != "" {
			text += "\n\n" + task
		}
		if s.opts.PII != nil {
			if text, err = s.opts.PII.Text(text); err != nil {
				return nil, fmt.Errorf("prompt %s: %w", req.Params.Name, err)
			}
		}
		return &mcp.GetPromptResult{
			Description: fmt.Sprintf("persona %s@%s", got.Name, got.Version),
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	}
}

// personaHandler reads agentos://personas/{name}[@{version}] as p.
func (s *Server) personaHandler(p proc.Process) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		name, version := persona.SplitRef(strings.TrimPrefix(uri, uriPersonas))
		got, err := s.readPersona(ctx, p, name, version)
		if err != nil {
			return nil, readError(uri, err)
		}
		return s.contents(uri, "text/markdown", string(persona.Format(got)))
	}
}

// personaNames are the names of the personas p may read.
func (s *Server) personaNames(p proc.Process) []string {
	if s.opts.Personas == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ps := range s.personas {
		if p.Covers(capability.Read, s.opts.Personas.CurrentPath(ps.Name)) {
			out = append(out, ps.Name)
		}
	}
	slices.Sort(out)
	return out
}

// personaVersions are the versions of persona name, when p may read it,
// the newest first.
func (s *Server) personaVersions(p proc.Process, name string) []string {
	if s.opts.Personas == nil || persona.CheckName(name) != nil || !p.Covers(capability.Read, s.opts.Personas.CurrentPath(name)) {
		return nil
	}
	vs, err := s.opts.Personas.Versions(name)
	if err != nil {
		return nil
	}
	var out []string
	for i := len(vs) - 1; i >= 0; i-- {
		out = append(out, vs[i].Version)
	}
	return out
}
