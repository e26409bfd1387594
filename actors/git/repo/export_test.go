package repo

import (
	"fmt"
	"maps"
)

// FilesAreTheTree says whether r's flattened file map is its tree's
// (tests): nil, or the difference.
func (r *Repo) FilesAreTheTree() error {
	want, err := flatten(r.sto, r.tree)
	if err != nil {
		return err
	}
	if !maps.Equal(want, r.files) {
		return fmt.Errorf("the repo's files %v, its tree's %v", r.files, want)
	}
	return nil
}

// SetPreloadHook sets what preloadStat tells of each preload (tests).
func SetPreloadHook(f func(n int)) { preloadHook = f }

// MaxPacks is the pack count above which packs are merged (tests).
const MaxPacks = maxPacks
