package host

import (
	"context"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/governance/personagate"
	"github.com/agentos-run/agentos/persona"
)

// Persona versions are held for approval as forged tools are (see
// governance/personagate): this file wires the tool root's persona gate.

// PersonaRisk is the Risk of a persona version's approval request.
const PersonaRisk = personagate.Risk

// personaApprovals returns the approvals file for persona versions; nil
// when persona versions are not held (agents.approve_personas false).
func (rt *Runtime) personaApprovals() (*approval.Store, error) {
	if !rt.cfg.Agents.PersonaApproval() {
		return nil, nil
	}
	return approval.OpenStore(filepath.Join(rt.root, ApprovalsFile), 2*time.Second)
}

// personaGate returns the tool root's persona gate.
func (rt *Runtime) personaGate() *personagate.Gate {
	return &personagate.Gate{Root: rt.root, Personas: rt.Personas(), Open: rt.personaApprovals, Log: rt.log}
}

// personaSaved records p, just saved on this node by origin, approved.
func (rt *Runtime) personaSaved(p persona.Persona, origin string) error {
	return rt.personaGate().Saved(p, origin)
}

// UsePersona makes a saved version of a persona the current one again
// (persona.Store.Use; ref is "name@version"), and records it approved:
// a version this node's operator chose.
func (rt *Runtime) UsePersona(ctx context.Context, ref string) (persona.Persona, error) {
	p, err := rt.Personas().Use(ctx, ref)
	if err != nil {
		return p, err
	}
	return p, rt.personaSaved(p, "use")
}

// approvedPersona returns p, or the version an agent may use instead
// (personagate.Gate.Approved).
func (rt *Runtime) approvedPersona(p persona.Persona, pinned bool) (persona.Persona, error) {
	return rt.personaGate().Approved(p, pinned)
}

// FileAuthor returns the author of the commit that last changed the file
// path (slash-separated) of the tool root ("" when unknown) and a line
// describing that commit (or why there is none).
func FileAuthor(root, path string) (author, commit string) {
	return personagate.FileAuthor(root, path)
}

// decidePersona decides target when it names a persona version's request
// (ok true); ok false when it names none.
func (rt *Runtime) decidePersona(target string, approve bool, opts ApproveOptions) (r approval.Request, ok bool, err error) {
	return rt.personaGate().Decide(target, approve, opts.By, opts.Reason)
}
