package host

import (
	"path"
	"strings"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/governance/personagate"
	"github.com/agentos-run/agentos/persona"
)

// approvalStore is the approvals file the Approvals pages read: the tool
// gate's, which persona versions' requests share, or, with the tool gate
// off, the persona gate's (persona versions are held whatever the tools'
// gate says). nil when neither gate holds anything.
func (b *consoleBackend) approvalStore() (*approval.Store, error) {
	if b.rt.gate != nil {
		return b.rt.gate.Store(), nil
	}
	return b.rt.personaApprovals()
}

// personaSource is the text of the persona version r asks about (its
// file as the persona store formats it), or a note saying why there is
// none; ok false when r is not a persona version's request.
func (b *consoleBackend) personaSource(r approval.Request) (src, note string, ok bool) {
	if r.Risk != personagate.Risk {
		return "", "", false
	}
	name := strings.TrimSuffix(path.Base(r.Path), ".md")
	p, err := b.rt.Personas().Get(name + "@" + r.Hash)
	if err != nil {
		return "", "the persona store no longer holds this version: " + err.Error(), true
	}
	return string(persona.Format(p)), "", true
}
