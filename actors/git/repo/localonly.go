package repo

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Local files. The files a tool root held before its first checkout that
// the upstream does not have (a user's data, hand-written drafts) are
// the user's, not shared tools: they stay local. They are recorded in the
// agentos section of .git/info/exclude (so that `git status` does not
// list them either), never committed implicitly, and published only when
// a Persist names them (write_file of that path), which takes them off
// the list.

// excludeFile is the repository's own exclude list, under .git.
const excludeFile = "info/exclude"

const (
	excludeBegin = "# agentos: files that were in the tool root before its first checkout; they stay local (never committed unless written by name)"
	excludeEnd   = "# agentos: end"
)

// loadLocalOnly reads the agentos section of .git/info/exclude.
func (r *Repo) loadLocalOnly() {
	r.localOnly = map[string]bool{}
	f, err := os.Open(filepath.Join(r.gitDir, filepath.FromSlash(excludeFile)))
	if err != nil {
		return
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == excludeBegin:
			in = true
		case l == excludeEnd:
			in = false
		case in && strings.HasPrefix(l, "/"):
			if p, err := cleanRel(unescapePattern(l[1:])); err == nil {
				r.localOnly[p] = true
			}
		}
	}
}

// saveLocalOnly rewrites the agentos section of .git/info/exclude (the
// rest of the file is kept).
func (r *Repo) saveLocalOnly() error {
	path := filepath.Join(r.gitDir, filepath.FromSlash(excludeFile))
	var keep []string
	if b, err := os.ReadFile(path); err == nil {
		keep = outsideSection(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var b strings.Builder
	for _, l := range keep {
		if l != "" || b.Len() > 0 {
			b.WriteString(l + "\n")
		}
	}
	if len(r.localOnly) > 0 {
		b.WriteString(excludeBegin + "\n")
		for _, p := range sortedKeys(r.localOnly) {
			b.WriteString("/" + escapePattern(p) + "\n")
		}
		b.WriteString(excludeEnd + "\n")
	}
	return atomicWrite(r.gitDir, path, []byte(b.String()), 0o644)
}

// outsideSection returns the lines of the exclude file content that are
// not in the agentos section.
func outsideSection(content string) []string {
	var keep []string
	in := false
	for _, l := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
		switch {
		case l == excludeBegin:
			in = true
		case l == excludeEnd:
			in = false
		case !in:
			keep = append(keep, l)
		}
	}
	return keep
}

// escapePattern makes a path a literal gitignore pattern.
func escapePattern(p string) string {
	var b strings.Builder
	for i, c := range p {
		switch {
		case c == '*' || c == '?' || c == '[' || c == '\\':
			b.WriteByte('\\')
		case i == 0 && (c == '#' || c == '!'):
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	s := b.String()
	if strings.HasSuffix(s, " ") {
		s = strings.TrimSuffix(s, " ") + "\\ "
	}
	return s
}

func unescapePattern(s string) string {
	var b strings.Builder
	esc := false
	for _, c := range s {
		if c == '\\' && !esc {
			esc = true
			continue
		}
		esc = false
		b.WriteRune(c)
	}
	return b.String()
}

// refRecorded says whether the tool root records ref at all (a loose file
// or a packed-refs line, valid or not): whether a checkout ever completed
// in it.
func (r *Repo) refRecorded(ref plumbing.ReferenceName) bool {
	if _, err := os.Lstat(filepath.Join(r.gitDir, filepath.FromSlash(ref.String()))); err == nil {
		return true
	}
	b, err := os.ReadFile(filepath.Join(r.gitDir, "packed-refs"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if _, name, ok := strings.Cut(strings.TrimSpace(l), " "); ok && name == ref.String() {
			return true
		}
	}
	return false
}
