package git

import (
	"fmt"
	"path"
	"strings"

	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/system"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/vfs"
)

// PersonasDir is the tool root's directory of personas (package persona):
// the system prompts and grants of the node's agents.
const PersonasDir = "personas"

// Protected returns why no write from a process or another node may change
// p (a path relative to the tool root), or "" when it may:
//
//   - agentos.json (the node's policy: rights, isolation, gates) and
//     anything under a .agentos or .git directory (its state: journal,
//     keys, approvals, the repository) are never written through the git
//     actor, by anyone: the operator edits them on the node;
//   - personas/ (every agent's system prompt and grants) is written only by
//     the node itself (byNode: agentos persona save, Node.WriteFile).
//
// IMPORTANT: this is the one rule every write passes (WriteFile, PatchFile,
// whatever their sender): kernel tools (write_file, patch_file) and
// requests from other nodes are refused here whatever their token grants.
func Protected(p string, byNode bool, nodeOnly ...string) string {
	c := path.Clean(strings.TrimPrefix(strings.ReplaceAll(p, "\\", "/"), "./"))
	parts := strings.Split(c, "/")
	if c == vfs.ConfigFile || strings.EqualFold(c, vfs.ConfigFile) {
		return vfs.ConfigFile + " is the node's policy (rights, isolation, gates): the operator edits it on the node, and no write through the node may change it"
	}
	for _, s := range parts {
		if s == ".agentos" || s == ".git" || strings.EqualFold(s, ".agentos") || strings.EqualFold(s, ".git") {
			return s + " holds the node's own state (journal, keys, approvals, the repository): no write through the node may change it"
		}
	}
	if byNode {
		return ""
	}
	for _, d := range append([]string{PersonasDir}, nodeOnly...) {
		d = strings.Trim(path.Clean(strings.ReplaceAll(d, "\\", "/")), "/")
		if d == "" || d == "." {
			continue
		}
		if strings.EqualFold(c, d) || strings.HasPrefix(strings.ToLower(c), strings.ToLower(d)+"/") {
			return d + "/ holds every agent's system prompt and grants: only the node's operator changes it (agentos persona save), never a process or another node"
		}
	}
	return ""
}

// authorizeWrite establishes who sent a write of p (local: it arrived in a
// system.Local; token: its token field) and checks that it may write p:
// the node, or a token granting write on p, and never a protected path
// (Protected). Errors wrap system.ErrUnauthenticated, capability.ErrDenied
// or gitclient.ErrProtected.
func (a *gitActor) authorizeWrite(verb, p string, local bool, token string) error {
	from, err := system.Authenticate(a.opts.Authority, local, token, verb+" of "+p)
	if err != nil {
		return err
	}
	if why := Protected(p, from.Node, a.opts.NodeOnly...); why != "" {
		return fmt.Errorf("%w: %s of %s refused (for %s): %s", gitclient.ErrProtected, verb, p, from.Holder(), why)
	}
	if err := from.Permit(capability.Write, p); err != nil {
		return fmt.Errorf("%s of %s refused: %w", verb, p, err)
	}
	return nil
}

// authorizeSync establishes who sent a request that brings the tool root
// up to the upstream (Announce, WaitFor, Pull): the node, or any holder of
// a valid token. It writes nothing of the sender's, but pulls and holds
// waiters: an unauthenticated peer gets nothing of it.
func (a *gitActor) authorizeSync(what string, local bool, token string) error {
	_, err := system.Authenticate(a.opts.Authority, local, token, what)
	return err
}
