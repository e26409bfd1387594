package repo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Write intents: the record a writer keeps of a write under way.
//
// A write is two steps (the file reaches the working tree, then Persist
// commits it), and a writer killed in between leaves a working file that
// differs from the tree. So does a person editing the tool root by hand,
// and the two look alike. IMPORTANT: recovery (recoverUnsaved) commits a
// file left unsaved ONLY when an intent the writer recorded before the
// write names it with the very content found in the working tree; every
// other difference (a file written by hand, a data file, a tool edited
// outside agentos) stays in the working tree, uncommitted, with a Warn
// line saying so. A writer MUST call Intend after its checks passed and
// before the content reaches the working tree; a Persist that succeeds
// clears the intents of its paths.

// intentDir is the directory of the intents, in the git directory: one
// file per path, named after the path's SHA-256.
const intentDir = "agentos-intents"

// intent is one recorded write: the file's path and the SHA-256 of the
// content the writer is about to write.
type intent struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

func (r *Repo) intentFile(p string) string {
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(r.gitDir, intentDir, hex.EncodeToString(sum[:]))
}

func contentSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Intend records, durably (on disk before it returns), that a write of
// content to path p (relative to the tool root) is under way: if the
// writer dies before Persist commits it, the next Hydrate recovers it
// (when the working file still holds exactly content and Options.Hold
// accepts it). IMPORTANT: the writer MUST call it after the write's checks
// passed and before the content reaches the working tree.
func (r *Repo) Intend(p string, content []byte) error {
	b, _ := json.Marshal(intent{Path: p, SHA256: contentSum(content)})
	dir := filepath.Join(r.gitDir, intentDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("repo: recording the write of %s: %w", p, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix)
	if err != nil {
		return fmt.Errorf("repo: recording the write of %s: %w", p, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), r.intentFile(p))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("repo: recording the write of %s: %w", p, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// intended reports whether a recorded intent names p with content b.
func (r *Repo) intended(p string, b []byte) bool {
	raw, err := os.ReadFile(r.intentFile(p))
	if err != nil {
		return false
	}
	var in intent
	return json.Unmarshal(raw, &in) == nil && in.Path == p && in.SHA256 == contentSum(b)
}

// dropIntents clears the intents of paths (their writes are committed).
func (r *Repo) dropIntents(paths []string) {
	for _, p := range paths {
		if err := os.Remove(r.intentFile(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("repo: clearing a write's record: " + err.Error())
		}
	}
}

// settleAge is how old a record must be before a recovery may clear it as
// settled or stale.
const settleAge = time.Minute

// dropSettledIntents clears the intents of the paths no longer pending:
// their writes were committed (a crash came after the commit, before the
// intent was cleared).
func (r *Repo) dropSettledIntents() {
	ents, err := os.ReadDir(filepath.Join(r.gitDir, intentDir))
	if err != nil {
		return
	}
	for _, e := range ents {
		// Another runtime on the same root MAY be recording a write right
		// now (its temporary file, or an intent whose file it is about to
		// write): only what is older than settleAge is this recovery's.
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < settleAge {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(r.gitDir, intentDir, e.Name()))
		var in intent
		if err != nil || json.Unmarshal(raw, &in) != nil || !r.pending[in.Path] {
			_ = os.Remove(filepath.Join(r.gitDir, intentDir, e.Name()))
		}
	}
}
