package repo

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

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

// repack merges packs when there are more than maxPacks: the smallest
// ones, chosen so that the packs left form a geometric progression (see
// packsToMerge), so an object is rewritten a logarithmic number of times
// however many commits are made. The new pack is complete (written aside,
// renamed) before the old ones are deleted, so a kill at any point leaves
// every object readable (at worst twice). Only this process reads the tool
// root's objects (one writer per tool root), and the storage is reopened
// afterwards: no reader holds a deleted pack.
func (r *Repo) repack() error {
	packs, err := r.sto.ObjectPacks()
	if err != nil || len(packs) <= maxPacks {
		return err
	}
	dir := filepath.Join(r.gitDir, "objects", "pack")
	merge, err := packsToMerge(dir, packs)
	if err != nil || len(merge) < 2 {
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

// packsToMerge picks the packs of dir that repack merges, by git's
// geometric rule (git repack --geometric=2, weighing packs by their object
// counts): sorted from the smallest, the packs kept each hold at least
// twice as many objects as all the packs before them, the merged pack
// included. Merging "all but the largest" instead rewrote the growing
// pack of earlier merges at every repack: a tool root's commits cost more
// the more commits it had made (write_file at 10,000 tools, 60 writes:
// repack was half of a write's CPU).
func packsToMerge(dir string, packs []plumbing.Hash) ([]plumbing.Hash, error) {
	weights := make(map[plumbing.Hash]uint32, len(packs))
	for _, p := range packs {
		n, err := packObjects(filepath.Join(dir, "pack-"+p.String()+".pack"))
		if err != nil {
			return nil, err
		}
		weights[p] = n
	}
	sorted := slices.Clone(packs)
	slices.SortFunc(sorted, func(a, b plumbing.Hash) int { return cmp.Compare(weights[a], weights[b]) })
	return sorted[:geometricSplit(sorted, weights)], nil
}

// geometricSplit is the number of the smallest packs (sorted by weight) to
// merge so that the rest form a progression of factor 2 above the merged
// pack (git's split_pack_geometry).
func geometricSplit(sorted []plumbing.Hash, weight map[plumbing.Hash]uint32) int {
	w := func(i int) uint64 { return uint64(weight[sorted[i]]) }
	i := len(sorted) - 1
	for ; i > 0; i-- {
		if w(i) < 2*w(i-1) {
			break
		}
	}
	split := 0
	if i > 0 {
		split = i + 1
	}
	var total uint64
	for j := range split {
		total += w(j)
	}
	for split < len(sorted) && split > 0 && w(split) < 2*total {
		total += w(split)
		split++
	}
	return split
}

// packObjects reads the object count from a pack file's header.
func packObjects(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var head [12]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return 0, fmt.Errorf("reading the header of %s: %w", path, err)
	}
	if string(head[:4]) != "PACK" {
		return 0, fmt.Errorf("%s is not a pack file", path)
	}
	return binary.BigEndian.Uint32(head[8:12]), nil
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
