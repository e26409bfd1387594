package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/persona"
)

// Personas are system prompts, and anyone who can push to the upstream
// can change them on every node (protocol: false included). So a persona
// version is trusted like a forged tool is: a version this node saved
// (SavePersona, UsePersona, a tournament's winner) is recorded approved in
// the approvals file as it is saved; any other version (pulled from the
// upstream, edited into the file by hand) is recorded pending, with the
// author of the commit that last changed the persona's file, the first
// time an agent would use it, and the agent uses the newest version of
// that persona that is approved, saying so at Warn. `agentos approve
// personas/NAME.md@VERSION` (Runtime.Approve) approves it. A version named
// explicitly (name@version) is used only when approved. With
// agents.approve_personas false, every version is used as found.

// PersonaRisk is the Risk of a persona version's approval request.
const PersonaRisk = "persona"

// personaApprovals returns the approvals file for persona versions; nil
// when persona versions are not held (agents.approve_personas false).
func (rt *Runtime) personaApprovals() (*approval.Store, error) {
	if !rt.cfg.Agents.PersonaApproval() {
		return nil, nil
	}
	return approval.OpenStore(filepath.Join(rt.root, ApprovalsFile), 2*time.Second)
}

// personaSaved records p, just saved on this node by origin, approved.
func (rt *Runtime) personaSaved(p persona.Persona, origin string) error {
	st, err := rt.personaApprovals()
	if st == nil || err != nil {
		return err
	}
	_, err = st.DecideVersion(approval.Ask{Path: rt.Personas().CurrentPath(p.Name), Hash: p.Version, Risk: PersonaRisk,
		Reasons: []string{"saved on this node (" + origin + ")"}}, true, "agentos (saved on this node)", origin)
	return err
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

// approvedPersona returns p when its version is approved (or persona
// versions are not held); otherwise it records the version pending and
// returns the newest approved version of the persona, unless pinned (the
// version was named), when it refuses.
func (rt *Runtime) approvedPersona(p persona.Persona, pinned bool) (persona.Persona, error) {
	st, err := rt.personaApprovals()
	if st == nil || err != nil {
		return p, err
	}
	path := rt.Personas().CurrentPath(p.Name)
	r, ok, err := st.Lookup(path, p.Version)
	if err != nil {
		return p, err
	}
	if ok && r.State == approval.StateApproved {
		return p, nil
	}
	if !ok {
		author, why := FileAuthor(rt.root, path)
		if r, _, err = st.Ask(approval.Ask{Path: path, Hash: p.Version, Risk: PersonaRisk, Reasons: personaReasons(p, why), By: author}); err != nil {
			return p, err
		}
	}
	held := fmt.Sprintf("persona %s version %s is %s (from %s): approve it with 'agentos approve %s@%s' after reading %s",
		p.Name, p.Version, r.State, orUnknown(r.RequestedBy), path, p.Version, rt.Personas().VersionPath(p.Name, p.Version))
	if pinned {
		return p, fmt.Errorf("agentos: %s", held)
	}
	vs, err := rt.Personas().Versions(p.Name)
	if err != nil {
		return p, err
	}
	slices.Reverse(vs) // newest first
	for _, v := range vs {
		if v.Version == p.Version {
			continue
		}
		if r, ok, err := st.Lookup(path, v.Version); err != nil {
			return p, err
		} else if ok && r.State == approval.StateApproved {
			rt.log.Warn("agentos: "+held+"; agents use its last approved version meanwhile", slog.String("persona", p.Name), slog.String("held", p.Version), slog.String("using", v.Version))
			return v, nil
		}
	}
	return p, fmt.Errorf("agentos: %s; it has no approved version to use meanwhile", held)
}

// personaReasons says what a held version changes.
func personaReasons(p persona.Persona, commit string) []string {
	out := []string{"not saved on this node: " + commit}
	if p.NoProtocol {
		out = append(out, "protocol: false (the kernel-tools protocol is not sent)")
	}
	return out
}

// FileAuthor returns the author of the commit that last changed the file
// path (slash-separated) of the tool root ("" when unknown) and a line
// describing that commit (or why there is none).
func FileAuthor(root, path string) (author, commit string) {
	repo, err := gogit.PlainOpen(root)
	if err != nil {
		return "", "the tool root has no Git history: the file was written by hand"
	}
	it, err := repo.Log(&gogit.LogOptions{FileName: &path})
	if err != nil {
		return "", "its commit cannot be read: " + err.Error()
	}
	defer it.Close()
	c, err := it.Next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", "never committed: the file was written by hand"
		}
		return "", "its commit cannot be read: " + err.Error()
	}
	a := fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email)
	return a, fmt.Sprintf("commit %s by %s at %s: %s", c.Hash.String()[:12], a, c.Author.When.UTC().Format(time.RFC3339), firstLine(c.Message))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown author"
	}
	return s
}

// decidePersona decides target when it names a persona version's request
// (ok true); ok false when it names none.
func (rt *Runtime) decidePersona(target string, approve bool, opts ApproveOptions) (r approval.Request, ok bool, err error) {
	st, err := rt.personaApprovals()
	if st == nil || err != nil {
		return r, false, err
	}
	target = strings.TrimSpace(target)
	r, ok, err = st.Resolve(target)
	if err != nil {
		return approval.Request{}, false, err
	}
	if ok {
		if r.Risk != PersonaRisk {
			return approval.Request{}, false, nil
		}
		r, err = st.Decide(r.ID, approve, opts.By, opts.Reason)
		return r, true, err
	}
	p, v, _ := approval.SplitTarget(target)
	a, ok, err := personaVersionAsk(rt.root, rt.Personas(), p, v)
	if !ok || err != nil {
		return approval.Request{}, ok, err
	}
	r, err = st.DecideVersion(a, approve, opts.By, opts.Reason)
	return r, true, err
}

// personaVersionAsk returns the approval request of a version of the
// persona whose file is p (its current version when version is ""); ok
// false when p is not a persona's file.
func personaVersionAsk(root string, st *persona.Store, p, version string) (a approval.Ask, ok bool, err error) {
	name, isMD := strings.CutSuffix(path.Base(p), ".md")
	if !isMD || persona.CheckName(name) != nil || st.CurrentPath(name) != p {
		return approval.Ask{}, false, nil
	}
	ref := name
	if version != "" {
		ref += "@" + version
	}
	v, err := st.Get(ref)
	if err != nil {
		return approval.Ask{}, true, err
	}
	author, why := FileAuthor(root, p)
	return approval.Ask{Path: p, Hash: v.Version, Risk: PersonaRisk, Reasons: personaReasons(v, why), By: author}, true, nil
}
