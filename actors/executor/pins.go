package executor

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/actors/executor/internal/sandbox"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/internal/lazyre"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// Runs pinned to exact versions (docs/GOVERNANCE.md).
//
// Every recorded run keeps the source of its entry and of every module it
// required, by content hash (journal.RunMeta.Hash, Modules). Replay and
// recovery hand the run's modules back to the executor as Pins: a require
// that resolves to a pinned module runs its recorded source, whatever the
// tool tree holds now (changed, deleted). A call by version
// (tools/x.ts@<hash>) runs the recorded source of that version with the
// modules its latest run required.

// Pins pins a run's requires to recorded versions (Request.Pins).
//
// IMPORTANT: a require whose spec resolves (by the usual candidates: the
// exact path, .ts, .js, /index.ts, /index.js) to a pinned module MUST load
// the pinned source, never the tree's file; only a require that resolves to
// no pinned module reads the tree, and is listed by FromTree. The caller's
// rights (Request.Rights) still apply to a pinned module's path.
type Pins struct {
	// Modules are the recorded modules (journal.RunMeta.Modules).
	Modules []journal.Module
	// Source returns a recorded source by content hash
	// (journal.Journal.Source). REQUIRED when Modules is not empty.
	Source func(hash string) ([]byte, error)
	// Override replaces the source of pinned modules, by path (e.g.
	// tools/lib/x.ts): a replay of the run against a new version of a
	// module it required (ReplayOptions.Sources). A path not pinned is not
	// affected: it reads the tree.
	Override map[string][]byte

	mu       sync.Mutex
	fromTree []string
}

// FromTree returns the modules the run required that were not pinned, read
// from the tool tree as it is now (paths, in the order first required).
func (p *Pins) FromTree() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.fromTree)
}

// lookup returns the pinned module a require of candidate c loads.
func (p *Pins) lookup(c string) (journal.Module, bool) {
	for _, m := range p.Modules {
		if m.Named(c) {
			return m, true
		}
	}
	return journal.Module{}, false
}

func (p *Pins) noteTree(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.fromTree, path) {
		p.fromTree = append(p.fromTree, path)
	}
}

// requirePinned loads pinned module pm (or its Override), as required by
// spec from from.
func (b *bridge) requirePinned(pm journal.Module, from, spec string) (sandbox.Module, error) {
	if b.rights != nil {
		if err := b.rights.Allow(vfs.AccessRead, pm.Path); err != nil {
			return sandbox.Module{}, driver.Errorf(driver.CodeSecurity, "require(%q) from %s: the tool runs with its caller's rights, and the caller may not read %s (%v)", spec, from, pm.Path, err)
		}
	}
	src, ok := b.pins.Override[pm.Path]
	if !ok {
		var err error
		if b.pins.Source == nil {
			err = fmt.Errorf("no journal to read it from")
		} else {
			src, err = b.pins.Source(pm.Hash)
		}
		if err != nil {
			return sandbox.Module{}, driver.Errorf(driver.CodeNotFound, "require(%q) from %s: the run is pinned to version %.12s of %s, and it cannot be loaded (%v); the journal keeps a run's modules until the run is pruned", spec, from, pm.Hash, pm.Path, err)
		}
	}
	out, err := b.e.opts.Transpiler.Runnable(pm.Path, src)
	if err != nil {
		return sandbox.Module{}, driver.Errorf(string(sandbox.KindCompile), "require(%q) from %s: %v", spec, from, err)
	}
	if err := b.noteModule(journal.Module{Path: pm.Path, Hash: out.Hash, As: pm.As}, src); err != nil {
		return sandbox.Module{}, err
	}
	return sandbox.Module{Path: pm.Path, Hash: out.Hash, JS: out.JS}, nil
}

// noteModule hands a module the run is about to run to Request.OnModule
// (the journal records it before it runs).
func (b *bridge) noteModule(m journal.Module, src []byte) error {
	if b.admit != nil {
		// IMPORTANT: before the journal records it and before it runs.
		if err := b.admit(m, src); err != nil {
			return err
		}
	}
	if b.onModule == nil {
		return nil
	}
	if err := b.onModule(m, src); err != nil {
		// IMPORTANT: a module the journal cannot record does not run: the
		// run could not be replayed with it.
		return driver.Errorf(driver.CodeUnavailable, "require of %s: not loaded: the journal could not record its version: %v", m.Path, err)
	}
	return nil
}

// versionRE matches a tool path that names a version: tools/x.ts@<hex>.
var versionRE = lazyre.New(`^(.+)@([0-9a-fA-F]+)$`)

// SplitVersion splits a tool path that names a recorded version
// (tools/x.ts@<hash prefix>) into the path and the hash prefix; ok is false
// for a plain path. The prefix MUST have at least journal.MinVersionPrefix
// hex digits to resolve (ResolveVersion says so otherwise).
func SplitVersion(p string) (path, version string, ok bool) {
	if !strings.Contains(p, "@") {
		return p, "", false // every exec's path: no regexp (about 10 µs of each)
	}
	m := versionRE().FindStringSubmatch(p)
	if m == nil || strings.Contains(m[2], "/") {
		return p, "", false
	}
	return m[1], strings.ToLower(m[2]), true
}

// ResolveVersion makes req run the recorded version its path names
// (tools/x.ts@<hash prefix>): the source the journal keeps for that hash,
// with the modules the latest run of that version required pinned (a module
// it did not record reads the tree). req.Path becomes the plain path. A
// plain path is left alone (nil). An unknown or ambiguous version is an
// error of kind not_found that lists the versions the journal keeps.
func ResolveVersion(j *journal.Journal, req *Request) *Error {
	path, version, ok := SplitVersion(req.Path)
	if !ok {
		return nil
	}
	if j == nil {
		return &Error{Kind: ErrNotFound.Kind, Code: driver.CodeNotFound, Message: fmt.Sprintf("%s names a recorded version of %s, and versions are kept in the journal: this run has none (drop --no-journal, or run the current file as %s)", req.Path, path, path)}
	}
	v, src, err := j.ResolveVersion(path, version)
	if err != nil {
		return &Error{Kind: ErrNotFound.Kind, Code: driver.CodeNotFound, Message: err.Error()}
	}
	if transpile.Hash(src) != v.Hash {
		return &Error{Kind: ErrNotFound.Kind, Code: driver.CodeNotFound, Message: fmt.Sprintf("%s: the journal's source for version %s does not have that hash (the journal is damaged: run 'agentos runs prune' or restore it)", req.Path, v.Hash)}
	}
	req.Path, req.Source, req.version = path, src, v.Hash
	req.Pins = &Pins{Modules: v.Modules, Source: j.Source}
	return nil
}
