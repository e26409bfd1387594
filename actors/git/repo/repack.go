package repo

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// maxPacks is the pack count above which a tool root's packs are merged.
const maxPacks = 16

// flush writes the objects made since the last flush as one pack, and
// repacks when packs pile up.
func (r *Repo) flush() error {
	if err := r.sto.flush(); err != nil {
		return fmt.Errorf("repo: writing objects: %w", err)
	}
	if err := r.repack(); err != nil {
		r.log.Warn("git: repacking failed; objects are intact", slog.String("err", err.Error()))
	}
	return nil
}

// repack merges packs when there are more than maxPacks: all of them but
// the largest, or all of them when the largest holds less than the others
// together (so a big pack is rewritten rarely). The new pack is complete
// (written aside, renamed) before the old ones are deleted, so a kill at
// any point leaves every object readable (at worst twice). Only this
// process reads the tool root's objects (one writer per tool root), and the
// storage is reopened afterwards: no reader holds a deleted pack.
func (r *Repo) repack() error {
	packs, err := r.sto.ObjectPacks()
	if err != nil || len(packs) <= maxPacks {
		return err
	}
	dir := filepath.Join(r.gitDir, "objects", "pack")
	merge, err := packsToMerge(dir, packs)
	if err != nil {
		return err
	}
	var hashes []plumbing.Hash
	for _, p := range merge {
		hs, err := packHashes(filepath.Join(dir, "pack-"+p.String()+".idx"))
		if err != nil {
			return err
		}
		hashes = append(hashes, hs...)
	}
	w, err := r.sto.Storage.PackfileWriter()
	if err != nil {
		return err
	}
	_, encErr := packfile.NewEncoder(w, r.sto, false).Encode(hashes, 10)
	if err := errors.Join(encErr, w.Close()); err != nil {
		return err
	}
	fresh, err := r.sto.ObjectPacks()
	if err != nil {
		return err
	}
	if len(fresh) != len(packs)+1 {
		return fmt.Errorf("repack: %d packs after writing one to %d", len(fresh), len(packs))
	}
	// Reopen the storage: it caches the indexes of the packs to delete.
	if err := r.sto.reopen(r.gitDir); err != nil {
		return err
	}
	if err := removePacks(dir, merge); err != nil {
		return err
	}
	r.log.Debug("git: repacked", slog.Int("packs", len(merge)), slog.Int("objects", len(hashes)))
	return nil
}

// packsToMerge picks the packs of dir that repack merges: all but the
// largest, unless it holds less than the others together.
func packsToMerge(dir string, packs []plumbing.Hash) ([]plumbing.Hash, error) {
	var total, largest int64
	var big plumbing.Hash
	for _, p := range packs {
		fi, err := os.Stat(filepath.Join(dir, "pack-"+p.String()+".pack"))
		if err != nil {
			return nil, err
		}
		total += fi.Size()
		if fi.Size() > largest {
			largest, big = fi.Size(), p
		}
	}
	var merge []plumbing.Hash
	for _, p := range packs {
		if p != big || largest < total-largest {
			merge = append(merge, p)
		}
	}
	return merge, nil
}

// removePacks deletes the merged packs of dir, each pack before its
// index: an index left without its pack is cleaned at Hydrate.
func removePacks(dir string, merged []plumbing.Hash) error {
	for _, p := range merged {
		base := filepath.Join(dir, "pack-"+p.String())
		for _, ext := range []string{".pack", ".idx", ".rev"} {
			if err := os.Remove(base + ext); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// packHashes lists the objects of a pack from its index.
func packHashes(idxPath string) ([]plumbing.Hash, error) {
	f, err := os.Open(idxPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		return nil, err
	}
	it, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []plumbing.Hash
	for {
		e, err := it.Next()
		if err != nil {
			break
		}
		out = append(out, e.Hash)
	}
	return out, nil
}
