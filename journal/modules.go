package journal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Runs pinned to exact versions.
//
// A run records the content hash of its entry tool (RunMeta.Hash) and of
// every module it required from the tool tree (RunMeta.Modules), and the
// journal keeps each source once, by hash (PutSource): replay and recovery
// load exactly the code that ran, whatever the tree holds now. A run
// recorded before this (RunMeta.Pinned false) has no module list and
// replays its requires from the tree, as it always did: old journals open
// and replay unchanged.

// Module is one module a run required from the tool tree.
type Module struct {
	// Path is the root-relative path the require resolved to (through its
	// links, as Node's realpath), e.g. tools/lib/x.ts: the module's name in
	// the run.
	Path string `json:"path"`
	// Hash is the content hash (hex SHA-256) of its TypeScript source,
	// kept in the journal's sources.
	Hash string `json:"hash"`
	// As is the path the require named when it reached Path through a
	// symbolic link ("" when it is Path itself).
	As string `json:"as,omitempty"`
}

// Named reports whether the module is what a require of the root-relative
// candidate path p loaded.
func (m Module) Named(p string) bool {
	if m.As != "" {
		return m.As == p
	}
	return m.Path == p
}

// ErrNoVersion: the journal keeps no version of the tool with that hash
// (prefix): no run of it (as its entry or a module it required) was
// recorded, or its runs were pruned.
var ErrNoVersion = errors.New("no such version of the tool in the journal")

// MinVersionPrefix is the shortest hash prefix that names a version
// (tools/x.ts@<prefix>).
const MinVersionPrefix = 8

// AddModule records that the run required module m, whose source is src:
// the source is kept by its hash (PutSource: once per journal), and the
// module joins the run's metadata (once per run: a second AddModule of the
// same module changes nothing). The metadata is written, once for all the
// modules added since, right before the run's next recorded call (queued
// ahead of that call's entry: committed with it, or before it under
// SyncEach and for a Durable run), or with its End or Interrupt: a crash
// never leaves a recorded call without the modules required before it.
// After End or Interrupt it records nothing.
//
// IMPORTANT: the executor MUST call it before the required module runs, so
// that recovery of the run finds the module's version.
func (r *Run) AddModule(m Module, src []byte) error {
	if m.Path == "" || m.Hash == "" {
		return fmt.Errorf("journal: AddModule needs the module's path and content hash")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	for _, have := range r.meta.Modules {
		if have == m {
			return nil
		}
	}
	if err := r.j.PutSource(m.Hash, src); err != nil {
		return err
	}
	r.meta.Modules = append(r.meta.Modules, m)
	r.dirty.Store(true)
	return nil
}

// flushModules writes the run's metadata if AddModule added modules since
// it was last written (see AddModule).
func (r *Run) flushModules() error {
	if !r.dirty.Load() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || !r.dirty.Load() {
		return nil
	}
	if err := r.putMeta(&write{}, r.waitsMeta()); err != nil {
		return err
	}
	r.dirty.Store(false)
	return nil
}

// Version is one version of a tool the journal keeps: a content hash the
// tool had in recorded runs.
type Version struct {
	Tool string `json:"tool"`
	Hash string `json:"hash"`
	// Runs counts the recorded runs of the tool at this version (as their
	// entry); Required counts the runs that required it as a module.
	Runs     int `json:"runs"`
	Required int `json:"required,omitempty"`
	// First and Last are when the first and the latest of those runs
	// started; LastRun is the latest one's id.
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	LastRun string    `json:"last_run"`
	// Modules are the modules the latest pinned run of the tool at this
	// version required (nil when it was required only as a module, or its
	// runs predate module pinning): a call by version runs with them.
	Modules []Module `json:"modules,omitempty"`
	// Commit is the Git commit of the latest run's tool tree, where known.
	Commit string `json:"commit,omitempty"`
}

// Versions returns the versions of the tool at path (root-relative, e.g.
// tools/x.ts) that the journal keeps, newest first: every content hash it
// had in a recorded run, as the run's entry or as a module a run required.
// It reads the tool index (toolindex.go), each version's latest run, and
// its runs newest first until a pinned one (Version.Modules); see
// ToolVersions for the versions without their modules.
func (j *Journal) Versions(path string) ([]Version, error) {
	vs, err := j.ToolVersions(path)
	if err != nil {
		return nil, err
	}
	for i := range vs {
		if vs[i].Runs == 0 {
			continue
		}
		if vs[i].Modules, err = j.pinnedModules(path, vs[i].Hash); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// VersionsOf is Versions over runs (oldest first, as Runs returns them).
func VersionsOf(runs []RunMeta, path string) []Version {
	byHash := map[string]*Version{}
	var order []*Version
	see := func(hash string, r RunMeta) *Version {
		v := byHash[hash]
		if v == nil {
			v = &Version{Tool: path, Hash: hash, First: r.Started}
			byHash[hash] = v
			order = append(order, v)
		}
		if !r.Started.Before(v.Last) {
			v.Last, v.LastRun, v.Commit = r.Started, r.ID, r.Commit
		}
		return v
	}
	for _, r := range runs { // oldest first
		if r.Tool == path && r.Hash != "" {
			v := see(r.Hash, r)
			v.Runs++
			if r.Pinned {
				v.Modules = slices.Clone(r.Modules)
			}
		}
		for _, m := range r.Modules {
			if m.Path == path {
				see(m.Hash, r).Required++
			}
		}
	}
	out := make([]Version, len(order))
	for i, v := range order {
		out[i] = *v
	}
	slices.SortStableFunc(out, func(a, b Version) int { return b.Last.Compare(a.Last) })
	return out
}

// ResolveVersion returns the version of the tool at path whose hash starts
// with prefix (at least MinVersionPrefix hex digits, unambiguous) and its
// source. An unknown or ambiguous prefix is an error (wrapping
// ErrNoVersion or ErrAmbiguous) that lists the versions the journal keeps.
func (j *Journal) ResolveVersion(path, prefix string) (Version, []byte, error) {
	prefix = strings.ToLower(prefix)
	all, err := j.Versions(path)
	if err != nil {
		return Version{}, nil, err
	}
	if len(prefix) < MinVersionPrefix || strings.Trim(prefix, "0123456789abcdef") != "" {
		return Version{}, nil, fmt.Errorf("%w: %s@%s: a version is the tool's content hash, or a prefix of at least %d hex digits of it; %s", ErrNoVersion, path, prefix, MinVersionPrefix, listVersions(path, all))
	}
	var found []Version
	for _, v := range all {
		if strings.HasPrefix(v.Hash, prefix) {
			found = append(found, v)
		}
	}
	switch {
	case len(found) == 0:
		return Version{}, nil, fmt.Errorf("%w: %s@%s; %s", ErrNoVersion, path, prefix, listVersions(path, all))
	case len(found) > 1:
		return Version{}, nil, fmt.Errorf("%w: %s@%s matches %d versions; give more of the hash; %s", ErrAmbiguous, path, prefix, len(found), listVersions(path, found))
	}
	src, err := j.Source(found[0].Hash)
	if err != nil {
		return Version{}, nil, fmt.Errorf("%w: %s@%s: %v", ErrNoVersion, path, found[0].Hash, err)
	}
	return found[0], src, nil
}

// listVersions says which versions of path exist, the most recent first
// (at most 5).
func listVersions(path string, vs []Version) string {
	if len(vs) == 0 {
		return fmt.Sprintf("the journal keeps no version of %s (no recorded run used it, or its runs were pruned); run it without @ to use the current file", path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "versions of %s the journal keeps, newest first:", path)
	for i, v := range vs {
		if i == 5 {
			fmt.Fprintf(&b, " ... and %d older ('agentos runs --tool %s' lists all)", len(vs)-5, path)
			break
		}
		runs := "runs"
		if v.Runs+v.Required == 1 {
			runs = "run"
		}
		fmt.Fprintf(&b, " %s@%.12s (%d %s, last %s)", path, v.Hash, v.Runs+v.Required, runs, v.Last.UTC().Format(time.RFC3339))
		if i < len(vs)-1 && i < 4 {
			b.WriteByte(',')
		}
	}
	return b.String()
}
