package personagate

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/persona"
)

// Risk is the Risk of a persona version's approval request.
const Risk = "persona"

// Gate holds the persona versions of one tool root for approval.
type Gate struct {
	// Root is the tool root (its Git history names a version's author).
	Root string
	// Personas is the tool root's persona store.
	Personas *persona.Store
	// Open opens the approvals file; a nil store (and nil error) when
	// persona versions are not held (agents.approve_personas false).
	Open func() (*approval.Store, error)
	// Log says at Warn when an agent uses an older, approved version.
	Log *slog.Logger
}

// Saved records p, just saved on this node by origin, approved.
func (g *Gate) Saved(p persona.Persona, origin string) error {
	st, err := g.Open()
	if st == nil || err != nil {
		return err
	}
	_, err = st.DecideVersion(approval.Ask{Path: g.Personas.CurrentPath(p.Name), Hash: p.Version, Risk: Risk,
		Reasons: []string{"saved on this node (" + origin + ")"}}, true, "agentos (saved on this node)", origin)
	return err
}

// Approved returns p when its version is approved (or persona versions are
// not held); otherwise it records the version pending and returns the
// newest approved version of the persona, unless pinned (the version was
// named), when it refuses.
func (g *Gate) Approved(p persona.Persona, pinned bool) (persona.Persona, error) {
	st, err := g.Open()
	if st == nil || err != nil {
		return p, err
	}
	path := g.Personas.CurrentPath(p.Name)
	r, ok, err := st.Lookup(path, p.Version)
	if err != nil {
		return p, err
	}
	if ok && r.State == approval.StateApproved {
		return p, nil
	}
	if !ok {
		author, why := FileAuthor(g.Root, path)
		if r, _, err = st.Ask(approval.Ask{Path: path, Hash: p.Version, Risk: Risk, Reasons: reasons(p, why), By: author}); err != nil {
			return p, err
		}
	}
	held := fmt.Sprintf("persona %s version %s is %s (from %s): approve it with 'agentos approve %s@%s' after reading %s",
		p.Name, p.Version, r.State, orUnknown(r.RequestedBy), path, p.Version, g.Personas.VersionPath(p.Name, p.Version))
	if pinned {
		return p, fmt.Errorf("agentos: %s", held)
	}
	return g.lastApproved(st, p, path, held)
}

// lastApproved returns the newest approved version of p's persona other
// than p's (held, the reason p is not used).
func (g *Gate) lastApproved(st *approval.Store, p persona.Persona, path, held string) (persona.Persona, error) {
	vs, err := g.Personas.Versions(p.Name)
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
			g.Log.Warn("agentos: "+held+"; agents use its last approved version meanwhile", slog.String("persona", p.Name), slog.String("held", p.Version), slog.String("using", v.Version))
			return v, nil
		}
	}
	return p, fmt.Errorf("agentos: %s; it has no approved version to use meanwhile", held)
}

// Decide decides target when it names a persona version's request (ok
// true), recording by and reason; ok false when it names none.
func (g *Gate) Decide(target string, approve bool, by, reason string) (r approval.Request, ok bool, err error) {
	st, err := g.Open()
	if st == nil || err != nil {
		return r, false, err
	}
	target = strings.TrimSpace(target)
	r, ok, err = st.Resolve(target)
	if err != nil {
		return approval.Request{}, false, err
	}
	if ok {
		if r.Risk != Risk {
			return approval.Request{}, false, nil
		}
		r, err = st.Decide(r.ID, approve, by, reason)
		return r, true, err
	}
	p, v, _ := approval.SplitTarget(target)
	a, ok, err := VersionAsk(g.Root, g.Personas, p, v)
	if !ok || err != nil {
		return approval.Request{}, ok, err
	}
	r, err = st.DecideVersion(a, approve, by, reason)
	return r, true, err
}

// VersionAsk returns the approval request of a version of the persona
// whose file is p in the tool root (its current version when version is
// ""); ok false when p is not a persona's file.
func VersionAsk(root string, st *persona.Store, p, version string) (a approval.Ask, ok bool, err error) {
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
	return approval.Ask{Path: p, Hash: v.Version, Risk: Risk, Reasons: reasons(v, why), By: author}, true, nil
}

// reasons says what a held version changes.
func reasons(p persona.Persona, commit string) []string {
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
