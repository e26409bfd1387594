package repo

import (
	"bytes"
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

// repack merges the tool root's packs (see mergePacks). Only this
// process writes the tool root (one writer per tool root, under its lock)
// and its storage is reopened afterwards.
func (r *Repo) repack() error {
	packs, objects, err := mergePacks(r.gitDir, r.sto)
	if err == nil && packs > 0 {
		r.log.Debug("git: repacked", slog.Int("packs", packs), slog.Int("objects", objects))
	}
	return err
}

// mergePacks merges the packs of the git directory gitDir, read through s,
// when there are more than maxPacks: the smallest ones, chosen so that the
// packs left form a geometric progression (see packsToMerge), so an object
// is rewritten a logarithmic number of times however many commits are
// made. The new pack is complete (written aside, renamed) before the old
// ones are deleted, so a kill at any point leaves every object readable
// (at worst twice); s is reopened before they are.
//
// IMPORTANT: the caller MUST hold the repository's writer lock (the tool
// root's, or a local upstream's). The merge takes the objects directory's
// readers' lock exclusively and without waiting (tryLockDir): while a
// reader that does not hold the writer lock (a fetch, Verify) holds it,
// no pack is deleted under it, and the merge is left to a later call
// (packs = 0, no error).
func mergePacks(gitDir string, s *store) (packs, objects int, err error) {
	all, err := s.ObjectPacks()
	if err != nil || len(all) <= maxPacks {
		return 0, 0, err
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	merge, err := packsToMerge(dir, all)
	if err != nil || len(merge) < 2 {
		return 0, 0, err
	}
	unlock, ok, err := tryLockDir(filepath.Join(gitDir, "objects"))
	if err != nil || !ok {
		return 0, 0, err
	}
	defer unlock()
	var hashes []plumbing.Hash
	for _, p := range merge {
		hs, err := packHashes(filepath.Join(dir, "pack-"+p.String()+".idx"))
		if err != nil {
			return 0, 0, err
		}
		hashes = append(hashes, hs...)
	}
	// An object in two of the packs (a push sent again after a kill, a
	// merge killed before it deleted its inputs) is written once: a pack
	// that holds it twice gets an index with fewer objects than its
	// header, and git refuses it.
	slices.SortFunc(hashes, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	hashes = slices.Compact(hashes)
	before := packTemps(s.Storage)
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return 0, 0, err
	}
	_, encErr := packfile.NewEncoder(w, s, false).Encode(hashes, 10)
	if err := errors.Join(encErr, w.Close()); err != nil {
		removeNewTemps(s.Storage, before)
		return 0, 0, err
	}
	fresh, err := s.ObjectPacks()
	if err != nil {
		return 0, 0, err
	}
	if len(fresh) != len(all)+1 {
		return 0, 0, fmt.Errorf("repack: %d packs after writing one to %d", len(fresh), len(all))
	}
	// Reopen the storage: it caches the indexes of the packs to delete.
	if err := s.reopen(gitDir); err != nil {
		return 0, 0, err
	}
	if err := removePacks(dir, merge); err != nil {
		return 0, 0, err
	}
	return len(merge), len(hashes), nil
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
	b, err := os.ReadFile(idxPath) // the decoder reads 4 to 20 bytes at a time
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(b)).Decode(idx); err != nil {
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
