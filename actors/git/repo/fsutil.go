package repo

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// Crash safety. go-git writes refs, the index and the config in place
// (truncate, then write): a process killed between the two leaves an empty
// file. This package never lets go-git write those files: every ref, the
// index, the config and every working-tree file is written to a temporary
// file "agentos-tmp-*" at the top of the git directory and renamed over its
// target, which is atomic. Objects are written by go-git, which already
// writes them to temporary files (tmp_obj_*, tmp_pack_*) and renames them.
// So a kill at any point leaves either the old or the new file, plus at most
// a stale temporary file, which cleanStale removes at the next Hydrate.
// No "*.lock" file is ever created.

const tmpPrefix = "agentos-tmp-"

// initPrefix names the directory a new .git is built in before it is
// renamed into place.
const initPrefix = ".agentos-git-init-"

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// atomicWrite writes data to target through a temporary file in tmpDir
// (which MUST be on target's filesystem) and a rename.
func atomicWrite(tmpDir, target string, data []byte, perm os.FileMode) error {
	tmp := filepath.Join(tmpDir, tmpPrefix+randomSuffix())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = os.Rename(tmp, target)
			}
		}
		if err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	return nil
}

// writeRef points the reference name of the repository at gitDir to h.
func writeRef(gitDir string, name plumbing.ReferenceName, h plumbing.Hash) error {
	return atomicWrite(gitDir, filepath.Join(gitDir, filepath.FromSlash(name.String())), []byte(h.String()+"\n"), 0o644)
}

// writeSymRef makes the reference name of gitDir symbolic to target.
func writeSymRef(gitDir string, name, target plumbing.ReferenceName) error {
	return atomicWrite(gitDir, filepath.Join(gitDir, filepath.FromSlash(name.String())), []byte("ref: "+target.String()+"\n"), 0o644)
}

// readLooseRef reads a loose hash reference; ok is false when it is missing
// or unreadable (an empty or corrupt file left by another tool).
func readLooseRef(gitDir string, name plumbing.ReferenceName) (plumbing.Hash, bool) {
	b, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(name.String())))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	s := strings.TrimSpace(string(b))
	if len(s) != 40 || !plumbing.IsHash(s) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(s), true
}

// readPackedRefs parses .git/packed-refs (empty when missing).
func readPackedRefs(gitDir string) map[plumbing.ReferenceName]plumbing.Hash {
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		h, name, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && len(h) == 40 && plumbing.IsHash(h) {
			out[plumbing.ReferenceName(name)] = plumbing.NewHash(h)
		}
	}
	return out
}

// writePackedRefs sets refs in .git/packed-refs (one atomic rename for all
// of them), keeping the other entries, and removes loose files of the same
// names, which would shadow them.
func writePackedRefs(gitDir string, refs map[plumbing.ReferenceName]plumbing.Hash, removeLoose bool) error {
	var keep []string
	if b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err == nil {
		keep = otherPackedRefs(string(b), refs)
	}
	var buf strings.Builder
	for _, l := range keep {
		buf.WriteString(l + "\n")
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n.String())
	}
	sort.Strings(names)
	for _, n := range names {
		if h := refs[plumbing.ReferenceName(n)]; !h.IsZero() {
			buf.WriteString(h.String() + " " + n + "\n")
		}
	}
	if err := atomicWrite(gitDir, filepath.Join(gitDir, "packed-refs"), []byte(buf.String()), 0o644); err != nil {
		return err
	}
	if !removeLoose {
		return nil
	}
	for n := range refs {
		if err := os.Remove(filepath.Join(gitDir, filepath.FromSlash(n.String()))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// otherPackedRefs returns the lines of the packed-refs file content that
// writePackedRefs keeps: the entries (and their peel lines) of refs not
// in refs. Comments, damaged lines and their peels are dropped.
func otherPackedRefs(content string, refs map[plumbing.ReferenceName]plumbing.Hash) []string {
	var keep []string
	skipPeel := false
	for _, line := range strings.Split(content, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "^"):
			if !skipPeel && len(line) == 41 && plumbing.IsHash(line[1:]) {
				keep = append(keep, line)
			}
			continue
		}
		h, name, ok := strings.Cut(line, " ")
		if !ok || len(h) != 40 || !plumbing.IsHash(h) || plumbing.ReferenceName(name).Validate() != nil {
			skipPeel = true // a damaged line (and its peel) is dropped
			continue
		}
		_, mine := refs[plumbing.ReferenceName(name)]
		skipPeel = mine
		if !mine {
			keep = append(keep, line)
		}
	}
	return keep
}

// writeConfig writes the git config of a repository atomically.
func writeConfig(gitDir string, cfg *config.Config) error {
	b, err := cfg.Marshal()
	if err != nil {
		return err
	}
	return atomicWrite(gitDir, filepath.Join(gitDir, "config"), b, 0o644)
}

// layout is the least a git directory needs (git wants objects/ and
// refs/; go-git writes packs in objects/pack). Directories are expensive
// on some filesystems: refs live in packed-refs.
var layout = []string{"objects", "objects/pack", "refs"}

// newGitDir builds an empty repository layout (config, HEAD, objects/,
// refs/) in a fresh directory next to final and renames it to final, so
// final either does not exist or is complete.
func newGitDir(final string, cfg *config.Config, branch string) error {
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, initPrefix)
	if err != nil {
		return err
	}
	if err := func() error {
		for _, d := range layout {
			if err := os.Mkdir(filepath.Join(tmp, filepath.FromSlash(d)), 0o755); err != nil {
				return err
			}
		}
		if err := writeConfig(tmp, cfg); err != nil {
			return err
		}
		if err := writeSymRef(tmp, plumbing.HEAD, plumbing.NewBranchReferenceName(branch)); err != nil {
			return err
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		return os.Rename(tmp, final)
	}(); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return nil
}

// removeStaleInits removes directories a killed newGitDir left in parent.
func removeStaleInits(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), initPrefix) {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// cleanStale removes what a killed writer can leave in a git directory:
// our temporary files and go-git's tmp_obj_/tmp_pack_ files when older
// than minAge, pack indexes without their pack (go-git writes the index in
// place before renaming the pack) whatever their age; with locks, also
// "*.lock" files (a killed git binary's: this package never creates one).
// It scans the top level, refs/, logs/ and objects/pack, never the
// loose-object fan-out.
//
// IMPORTANT: it MUST only run when no other writer of ours is inside
// gitDir: Hydrate runs it under the tool root's lock, receive-pack under
// the upstream's flock (and with a minimum age, for writers that do not
// take it).
func cleanStale(gitDir string, minAge time.Duration, locks bool) (removed []string) {
	s := &staleSweep{now: time.Now(), minAge: minAge, locks: locks}
	s.sweepDir(gitDir)
	s.sweepTree(filepath.Join(gitDir, "refs"))
	s.sweepTree(filepath.Join(gitDir, "logs"))
	s.sweepPacks(filepath.Join(gitDir, "objects", "pack"))
	return s.removed
}

// staleSweep is one cleanStale pass: its rules and what it removed.
type staleSweep struct {
	now     time.Time
	minAge  time.Duration
	locks   bool
	removed []string
}

// stale says whether a file named name is a killed writer's leftover.
func (s *staleSweep) stale(name string) bool {
	return strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, "tmp_obj_") ||
		strings.HasPrefix(name, "tmp_pack_") || (s.locks && strings.HasSuffix(name, ".lock"))
}

// remove removes p unless it is younger than the minimum age.
func (s *staleSweep) remove(p string) {
	if s.minAge > 0 {
		if fi, err := os.Lstat(p); err != nil || s.now.Sub(fi.ModTime()) < s.minAge {
			return
		}
	}
	if os.Remove(p) == nil {
		s.removed = append(s.removed, p)
	}
}

// sweepDir removes the stale files directly in dir.
func (s *staleSweep) sweepDir(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() && s.stale(e.Name()) {
			s.remove(filepath.Join(dir, e.Name()))
		}
	}
}

// sweepTree removes the stale files anywhere under dir.
func (s *staleSweep) sweepTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && s.stale(d.Name()) {
			s.remove(p)
		}
		return nil
	})
}

// sweepPacks removes the stale entries of the pack directory packDir, and
// the pack indexes whose pack is missing.
func (s *staleSweep) sweepPacks(packDir string) {
	ents, err := os.ReadDir(packDir)
	if err != nil {
		return
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case orphanIndex(n, names):
			// Whatever its age: only go-git writes an index before its
			// pack (git renames the pack first), and a writer of ours
			// holds the lock we run under. Left, it would be taken as
			// the index of the same pack written again (go-git keeps an
			// index already there): a partial one loses its objects.
			if os.Remove(filepath.Join(packDir, n)) == nil {
				s.removed = append(s.removed, filepath.Join(packDir, n))
			}
		case s.stale(n):
			s.remove(filepath.Join(packDir, n))
		}
	}
}

// orphanIndex says whether the file name of a pack directory listing names
// is a pack index without its pack.
func orphanIndex(name string, names map[string]bool) bool {
	return strings.HasPrefix(name, "pack-") && strings.HasSuffix(name, ".idx") && !names[strings.TrimSuffix(name, ".idx")+".pack"]
}

// within says whether the path p (slash-separated, relative to the tool
// root) is dir or under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// cleanRel validates a path relative to the tool root and returns it in
// canonical form (slash-separated, cleaned).
func cleanRel(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	p = filepath.ToSlash(p)
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is absolute: give it relative to the tool root", p)
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q leaves the tool root", p)
	}
	for _, part := range strings.Split(c, "/") {
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("path %q names .git", p)
		}
	}
	return c, nil
}

// safeTreePath says whether a path read from a tree may be written to the
// working tree (no "..", no .git, no absolute path).
func safeTreePath(p string) bool {
	c, err := cleanRel(p)
	return err == nil && c == p
}
