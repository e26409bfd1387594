package repo

// Refs and commits: reading and saving our refs, writing commits, naming
// the tool a change belongs to.

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// saveRefs records r.local and r.upstream on disk (packed-refs, one
// rename), after the objects they reach. The refs on disk are the truth a
// restarted process resumes from.
func (r *Repo) saveRefs() error {
	if err := r.flush(); err != nil {
		return err
	}
	err := writePackedRefs(r.gitDir, map[plumbing.ReferenceName]plumbing.Hash{r.branchRef: r.local, r.trackRef: r.upstream}, !r.looseGone)
	if err == nil {
		r.looseGone = true
	}
	return err
}

// readRef reads one of our refs; a missing, corrupt or dangling ref reads
// as zero.
func (r *Repo) readRef(name plumbing.ReferenceName) plumbing.Hash {
	h, ok := readLooseRef(r.gitDir, name)
	if !ok {
		h, ok = readPackedRefs(r.gitDir)[name]
	}
	if !ok {
		return plumbing.ZeroHash
	}
	if _, err := r.sto.EncodedObject(plumbing.CommitObject, h); err != nil {
		r.log.Warn("git: reference points at a missing commit; ignoring it", slog.String("ref", name.String()), slog.String("commit", h.String()))
		return plumbing.ZeroHash
	}
	return h
}

func (r *Repo) commitTree(h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(r.sto, h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit %s: %w", h, err)
	}
	return c.TreeHash, nil
}

func (r *Repo) stamp() string { return r.opts.Now().UTC().Format("20060102T150405") }

func (r *Repo) signature() object.Signature {
	return object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: r.opts.Now()}
}

func (r *Repo) writeCommit(tree, parent plumbing.Hash, msg string, author object.Signature) (plumbing.Hash, error) {
	c := &object.Commit{Author: author, Committer: r.signature(), Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	o := r.sto.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.sto.SetEncodedObject(o)
}

// toolName names a tool after its first path: tools/math/fib.ts ->
// "math-fib". Derived files are skipped.
func (r *Repo) toolName(paths []string) string {
	for _, p := range paths {
		if !r.isDerived(p) {
			return toolName(p)
		}
	}
	if len(paths) > 0 {
		return toolName(paths[0])
	}
	return "tools"
}

func toolName(p string) string {
	p = strings.TrimPrefix(p, "tools/")
	if ext := filepath.Ext(p); ext != "" && ext != p {
		p = strings.TrimSuffix(p, ext)
	}
	var b strings.Builder
	for _, c := range p {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	if s == "" {
		return "tools"
	}
	return s
}
