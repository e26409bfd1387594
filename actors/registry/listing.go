package registry

import (
	"io/fs"
	"strings"

	"github.com/agentos-run/agentos/vfs"
)

// Listed records what a scan of the tool root just lstat'ed (files by
// slash-separated path relative to the tool root: what
// repo.Options.Walked gives) and the paths it skipped (a directory with a
// final slash): Open's Rebuild lists the tools from it instead of walking
// the tools directory again, unless it cannot stand for that walk (see
// Registry.listing). The maps become the seed's.
//
// IMPORTANT: the caller MUST give every regular file and symbolic link
// under the tool root but the skipped paths, each with the stat it read
// last (after its own writes), and nothing it removed.
func (s *Seed) Listed(files map[string]fs.FileInfo, skipped []string) {
	s.mu.Lock()
	if s.files != nil { // not used yet
		s.listed, s.skipped = files, skipped
	}
	s.mu.Unlock()
}

// listing returns the tool files of the seed's listing, as scanEntries
// lists them, or false when there is none or it cannot stand for that
// walk: it skipped a path where the walk would find a tool, or it holds a
// symbolic link at, above or under the tools directory (the walk resolves
// links in the jail).
func (r *Registry) listing() ([]vfs.Entry, bool) {
	s := r.seed
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	files, skipped := s.listed, s.skipped
	s.mu.Unlock()
	if files == nil {
		return nil, false
	}
	for _, p := range skipped {
		if dir, ok := strings.CutSuffix(p, "/"); ok && r.overlaps(dir) && r.mayHoldTools(dir) || !ok && r.isTool(p) {
			return nil, false
		}
	}
	out := make([]vfs.Entry, 0, len(files))
	for p, fi := range files {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if r.overlaps(p) {
				return nil, false
			}
		case fi.Mode().IsRegular() && r.isTool(p) && vfs.Links(fi) <= 1:
			out = append(out, vfs.Entry{Path: p, Resolved: p, Info: fi})
		}
	}
	// No tool at all: the walk costs nothing then, and it is right where the
	// scan's names differ from the tools directory's in case alone (a
	// case-insensitive file system).
	return out, len(out) > 0
}

// overlaps reports whether p is the tools directory, above it or under it.
func (r *Registry) overlaps(p string) bool {
	d := r.toolsDir
	return d == "." || p == d || strings.HasPrefix(p, d+"/") || strings.HasPrefix(d, p+"/")
}

// mayHoldTools reports whether the directory p, which overlaps the tools
// directory, may hold a tool (isTool's rules for directories).
func (r *Registry) mayHoldTools(p string) bool {
	rel := p
	if r.toolsDir != "." {
		var ok bool
		if rel, ok = strings.CutPrefix(p, r.toolsDir+"/"); !ok {
			return true // the tools directory itself, or a directory above it
		}
	}
	if rel == "vendor" || strings.HasPrefix(rel, "vendor/") {
		return false
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") || part == "node_modules" {
			return false
		}
	}
	return true
}
