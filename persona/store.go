package persona

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/agentos-run/agentos/vfs"
)

// DefaultDir is the directory of the personas under the tool root.
const DefaultDir = "personas"

// FS reads the tool root (vfs.Jail does). A missing file or directory is
// an error wrapping fs.ErrNotExist or vfs.ErrNotFound.
type FS interface {
	// ReadFile returns the file at p (slash-separated, root-relative).
	ReadFile(p string) ([]byte, error)
	// List returns the files under dir, recursively, as root-relative
	// slash-separated paths, sorted.
	List(dir string) ([]string, error)
}

// Writer writes a file of the tool root and persists it, as the tool
// writes of the git actor do (committed and pushed with a Git upstream).
type Writer func(ctx context.Context, path string, content []byte) error

// Store keeps personas in a directory of the tool root:
//
//	<dir>/<name>.md                    the current version of each persona
//	<dir>/versions/<name>/<version>.md every version ever saved
//
// Both are ordinary files of the tool root, committed through Write like
// tools, so personas are shared through Git as tools are, and a version
// file, named by its content hash, never conflicts. A Store is safe for
// concurrent use as far as FS and Write are; two writers saving the same
// persona at once race like two writers of one tool (the last write wins
// locally, Git reports a conflict between nodes).
type Store struct {
	// Dir is the directory under the tool root (default DefaultDir).
	Dir string
	// FS reads it (REQUIRED).
	FS FS
	// Write writes and persists a file (nil: the Store is read-only and
	// Save fails).
	Write Writer
	// Now stamps saved versions (nil: time.Now).
	Now func() time.Time
}

func (s *Store) dir() string {
	if s.Dir == "" {
		return DefaultDir
	}
	return strings.Trim(path.Clean(s.Dir), "/")
}

// CurrentPath is the file of a persona's current version.
func (s *Store) CurrentPath(name string) string { return path.Join(s.dir(), name+".md") }

// VersionPath is the file of one version of a persona.
func (s *Store) VersionPath(name, version string) string {
	return path.Join(s.dir(), "versions", name, version+".md")
}

// files lists the directory; a missing one is empty.
func (s *Store) files() ([]string, error) {
	fs, err := s.FS.List(s.dir())
	if err != nil && isNotExist(err) {
		return nil, nil
	}
	return fs, err
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, vfs.ErrNotFound)
}

// Names returns the names of the personas, sorted.
func (s *Store) Names() ([]string, error) {
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		rel := strings.TrimPrefix(f, s.dir()+"/")
		if n, ok := strings.CutSuffix(rel, ".md"); ok && !strings.Contains(n, "/") && CheckName(n) == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// List returns the current version of every persona, by name. A file that
// does not parse is left out and reported in the error (the others are
// still returned).
func (s *Store) List() ([]Persona, error) {
	names, err := s.Names()
	if err != nil {
		return nil, err
	}
	var out []Persona
	var errs []error
	for _, n := range names {
		p, err := s.current(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

func (s *Store) current(name string) (Persona, error) {
	f := s.CurrentPath(name)
	b, err := s.FS.ReadFile(f)
	if err != nil {
		return Persona{}, err
	}
	p, err := Parse(f, b)
	if err != nil {
		return p, err
	}
	if p.Name == "" {
		p.Name = name
	}
	if p.Name != name {
		return p, fmt.Errorf("%w: %s names the persona %q: a persona's file is <name>.md; rename the file or fix its name line", ErrInvalid, f, p.Name)
	}
	return p, nil
}

// Get returns the persona ref names: "name" (its current version) or
// "name@version" (a version saved earlier; a unique prefix of the version
// will do). An unknown name or version is ErrNotFound, listing the known
// ones.
func (s *Store) Get(ref string) (Persona, error) {
	name, version := SplitRef(ref)
	if err := CheckName(name); err != nil {
		return Persona{}, err
	}
	p, err := s.current(name)
	if err != nil {
		if !isNotExist(err) {
			return Persona{}, err
		}
		names, _ := s.Names()
		known := "there are none yet: write one with 'agentos persona set NAME --file PROMPT.md' (or Runtime.SavePersona)"
		if len(names) > 0 {
			known = "the known ones are " + strings.Join(names, ", ")
		}
		return Persona{}, notFoundf("there is no persona %q in %s/: %s", name, s.dir(), known)
	}
	if version == "" || strings.HasPrefix(p.Version, version) {
		return p, nil
	}
	vs, err := s.Versions(name)
	if err != nil {
		return Persona{}, err
	}
	var match []Persona
	for _, v := range vs {
		if strings.HasPrefix(v.Version, version) {
			match = append(match, v)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		ids := make([]string, len(vs))
		for i, v := range vs {
			ids[i] = v.Version
		}
		return Persona{}, notFoundf("persona %q has no version %q: its versions are %s (see 'agentos persona versions %s')", name, version, strings.Join(ids, ", "), name)
	default:
		return Persona{}, fmt.Errorf("%w: %q is the prefix of %d versions of persona %q: give more of it", ErrInvalid, version, len(match), name)
	}
}

// Versions returns every saved version of a persona, oldest first (by
// their created time), the current one included even when it was written
// by hand without a version file.
func (s *Store) Versions(name string) ([]Persona, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	files, err := s.FS.List(path.Join(s.dir(), "versions", name))
	if err != nil && !isNotExist(err) {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Persona
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") || strings.Contains(strings.TrimPrefix(f, path.Join(s.dir(), "versions", name)+"/"), "/") {
			continue
		}
		b, err := s.FS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		p, err := Parse(f, b)
		if err != nil {
			return nil, err
		}
		p.Name = name
		if !seen[p.Version] {
			seen[p.Version] = true
			out = append(out, p)
		}
	}
	if cur, err := s.current(name); err == nil && !seen[cur.Version] {
		out = append(out, cur)
	} else if err != nil && !isNotExist(err) {
		return nil, err
	} else if err != nil && len(out) == 0 {
		return nil, notFoundf("there is no persona %q in %s/", name, s.dir())
	}
	sortByCreated(out)
	return out, nil
}

// Save writes p as the current version of its persona, and keeps it as a
// version (see Store). Version is computed, Created stamped when zero.
// Saving the text the persona already has (same version, description and
// protocol) writes nothing and returns the current version.
func (s *Store) Save(ctx context.Context, p Persona) (Persona, error) {
	if s.Write == nil {
		return Persona{}, errors.New("persona: this store is read-only (no Writer)")
	}
	if err := CheckName(p.Name); err != nil {
		return Persona{}, err
	}
	p.System = strings.TrimSpace(p.System)
	if p.System == "" {
		return Persona{}, fmt.Errorf("%w: persona %q: the system prompt is empty", ErrInvalid, p.Name)
	}
	p.Version = Version(p.System)
	if cur, err := s.current(p.Name); err == nil && cur.Version == p.Version && cur.Description == p.Description && cur.NoProtocol == p.NoProtocol {
		return cur, nil
	}
	if p.Created.IsZero() {
		now := time.Now
		if s.Now != nil {
			now = s.Now
		}
		p.Created = now().UTC().Truncate(time.Second)
	}
	content := Format(p)
	if err := s.Write(ctx, s.VersionPath(p.Name, p.Version), content); err != nil {
		return Persona{}, fmt.Errorf("persona %q: writing version %s: %w", p.Name, p.Version, err)
	}
	if err := s.Write(ctx, s.CurrentPath(p.Name), content); err != nil {
		return Persona{}, fmt.Errorf("persona %q: writing its current version: %w", p.Name, err)
	}
	return p, nil
}

// Use makes a saved version the current one again (a rollback): ref is
// "name@version".
func (s *Store) Use(ctx context.Context, ref string) (Persona, error) {
	name, version := SplitRef(ref)
	if version == "" {
		return Persona{}, fmt.Errorf("%w: %q names no version: write name@version (see 'agentos persona versions %s')", ErrInvalid, ref, name)
	}
	p, err := s.Get(ref)
	if err != nil {
		return Persona{}, err
	}
	if s.Write == nil {
		return Persona{}, errors.New("persona: this store is read-only (no Writer)")
	}
	if err := s.Write(ctx, s.CurrentPath(name), Format(p)); err != nil {
		return Persona{}, fmt.Errorf("persona %q: writing its current version: %w", name, err)
	}
	return p, nil
}
