package approval

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Judge judges a tool's version as the gate would: its current file when
// version is "", else the version recorded with that hash.
type Judge func(path, version string) (Ask, error)

// DecideTarget approves (or denies) target, recording by and reason:
// target is a request id ("a-…", or a unique prefix), or a tool path
// relative to the tool root (tools/x.ts, or tools/x.ts@<hash> for one
// version), which decides its pending request or, when none names it, the
// version judge judges now (an approval before the first run; the request
// returned says which version, its Hash, was decided). IMPORTANT: a path
// outside the tool root is refused, and a path with more than one version
// pending is refused (ErrAmbiguous, listing them).
func (g *Gate) DecideTarget(target string, approve bool, by, reason string, judge Judge) (Request, error) {
	target, err := cleanTarget(target)
	if err != nil {
		return Request{}, err
	}
	r, ok, err := g.Store().Resolve(target)
	if err != nil {
		return Request{}, err
	}
	if ok {
		return g.Decide(r.ID, approve, by, reason)
	}
	// No request names it: the version is judged now (the file as it is, or
	// the journal's recorded version) and decided.
	p, v, _ := SplitTarget(target)
	a, err := judge(p, v)
	if err != nil {
		return Request{}, fmt.Errorf("agentos: %s is neither a pending approval request nor a tool version here: %w ('agentos approvals' lists the requests)", target, err)
	}
	a.By = ""
	return g.DecideVersion(a, approve, by, reason)
}

// cleanTarget trims target and cleans its tool path, refusing an empty
// target and a path outside the tool root.
func cleanTarget(target string) (string, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return "", errors.New("agentos: approve what? name an approval request id (see 'agentos approvals') or a tool path")
	}
	if strings.HasPrefix(target, "a-") {
		return target, nil
	}
	p, v, versioned := SplitTarget(target)
	p = path.Clean(filepath.ToSlash(p))
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("agentos: %s: name a tool by its path relative to the tool root (e.g. tools/x.ts, or tools/x.ts@<hash> for one version), or an approval request id", target)
	}
	if versioned {
		return p + "@" + v, nil
	}
	return p, nil
}
