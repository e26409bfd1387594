package kerneltools

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// Judged is one version of a tool as the approval gate judges it: its
// entry's exact bytes and every module it requires.
type Judged struct {
	// Path is the entry, relative to the tool root.
	Path string
	// Src is the entry's source as judged: the bytes the run MUST execute.
	Src []byte
	// Hash is the entry's content hash (transpile.Hash of Src).
	Hash string
	// Key is the version's approval key: Hash when the entry requires no
	// module of the tool tree, else the hash of Hash and the sorted
	// path@hash list of its modules (Modules): a changed module is a new
	// version that asks again.
	Key string
	// Risk is the highest check_tool risk over the entry and its modules;
	// Reasons are the reasons for that level (a module's prefixed with its
	// path).
	Risk    check.Risk
	Reasons []string
	// Modules are the modules the entry requires, transitively, as
	// path@hash, sorted.
	Modules []string
	// Risks are the risk findings of the modules (not the entry's), each
	// with its Module set: check_tool adds them to the entry's own.
	Risks []check.RiskFinding
}

// Rating is check_tool's verdict on one module, as the gate uses it.
type Rating struct {
	// Risk is the module's own risk level; Reasons the reasons for it.
	Risk    check.Risk
	Reasons []string
	// Risks are all its risk findings (check.Result.Risks).
	Risks []check.RiskFinding
	// Modules are the module specifiers its syntax tree names
	// (check.Result.Modules).
	Modules []string
}

// RatingOf is the Rating of check_tool's result res.
func RatingOf(res check.Result) Rating {
	r := Rating{Risk: res.Risk, Risks: res.Risks, Modules: res.Modules}
	for _, f := range res.Risks {
		if f.Level == res.Risk && (len(r.Reasons) == 0 || r.Reasons[len(r.Reasons)-1] != f.Reason) {
			r.Reasons = append(r.Reasons, f.Reason)
		}
	}
	return r
}

// RiskFunc rates the source src of the module at path, whose content hash
// is hash: check_tool's analysis of its syntax tree (RatingOf).
type RiskFunc func(path string, src []byte, hash string) Rating

// maxJudgedModules bounds the modules the gate follows from one entry.
const maxJudgedModules = 256

// Judge judges the tool at path (resolved, relative to the root of jail)
// with entry source src: the entry and, transitively, every module it
// requires from the tools directory tools. IMPORTANT: the modules are the
// ones the syntax tree names (Rating.Modules, from check_tool's tree-sitter
// front end: a comment inside a require or an import is only a comment),
// never found by a pattern over the text; a require the tree cannot
// resolve (a computed spec, require aliased or passed around) is rated
// high on the requiring module by check_tool, and the module it loads is
// judged when it loads (Node.JudgeModule). They are resolved as the executor does
// (actors/executor's bridge.Require: a relative spec from the requiring
// module's directory, /lib/x from the tools directory, a bare name from
// tools/vendor; candidates x, x.ts, x.js, x/index.ts, x/index.js; links
// followed and kept in the tools directory). pinned, when set (a recorded
// version, tools/x.ts@<hash>), are the modules the version runs with,
// their sources read by source; a require that resolves to no pinned
// module reads the tree, as the run does. A require the tree cannot
// satisfy is skipped (the run fails on it); a module that cannot be read
// for another reason refuses the judgment.
func Judge(jail *vfs.Jail, tools, p string, src []byte, pinned []journal.Module, source func(hash string) ([]byte, error), risk RiskFunc) (Judged, error) {
	jg := &judging{jail: jail, tools: path.Clean(tools), pinned: pinned, source: source, seen: map[string]bool{p: true}}
	j := Judged{Path: p, Src: src, Hash: transpile.Hash(src)}
	top := risk(p, src, j.Hash)
	j.Risk, j.Reasons = top.Risk, top.Reasons
	todo := []judgedModule{{p, top.Modules}}
	var mods []string
	for len(todo) > 0 {
		m := todo[0]
		todo = todo[1:]
		for _, spec := range m.specs {
			r, b, ok, err := jg.resolve(m.path, spec)
			if err != nil {
				return Judged{}, err
			}
			if !ok || jg.seen[r] {
				continue
			}
			jg.seen[r] = true
			if len(jg.seen) > maxJudgedModules {
				return Judged{}, fmt.Errorf("%s requires more than %d modules: the approval gate does not judge so many; split the tool", p, maxJudgedModules)
			}
			h := transpile.Hash(b)
			mods = append(mods, r+"@"+h)
			rated := risk(r, b, h)
			j.fold(r, rated)
			todo = append(todo, judgedModule{r, rated.Modules})
		}
	}
	slices.Sort(mods)
	j.Modules = mods
	j.Key = j.Hash
	if len(mods) > 0 {
		j.Key = transpile.Hash([]byte(j.Hash + "\n" + strings.Join(mods, "\n")))
	}
	return j, nil
}

// judgedModule is a module whose requires are still to judge.
type judgedModule struct {
	path  string
	specs []string
}

// judging is one Judge's state: where modules are read from and which
// were judged.
type judging struct {
	jail   *vfs.Jail
	tools  string
	pinned []journal.Module
	source func(hash string) ([]byte, error)
	seen   map[string]bool
}

// fold adds module r's rating to j: its findings, and its reasons when its
// level is j's (a higher level replaces j's reasons).
func (j *Judged) fold(r string, rated Rating) {
	for _, f := range rated.Risks {
		f.Module = r
		j.Risks = append(j.Risks, f)
	}
	switch {
	case rated.Risk.AtLeast(j.Risk) && rated.Risk != j.Risk:
		j.Risk, j.Reasons = rated.Risk, nil
		fallthrough
	case rated.Risk == j.Risk:
		for _, w := range rated.Reasons {
			j.Reasons = append(j.Reasons, r+": "+w)
		}
	}
}

func (jg *judging) inTools(q string) bool {
	return jg.tools == "." || strings.HasPrefix(q, jg.tools+"/")
}

// base is where spec, required by from, points in the tree, or "" when
// the run refuses it or it is no module of the tree.
func (jg *judging) base(from, spec string) string {
	var base string
	switch {
	case strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == "..":
		base = path.Join(path.Dir(from), spec)
	case strings.HasPrefix(spec, vfs.LibMount+"/"):
		base = path.Join(jg.tools, strings.TrimPrefix(spec, vfs.LibMount+"/"))
	case strings.HasPrefix(spec, "/"):
		return "" // a mount's generated module (/mcp/...): not in the tree
	default:
		base = path.Join(jg.tools, "vendor", spec)
	}
	if base != jg.tools && !jg.inTools(base) {
		return "" // the run refuses it
	}
	return base
}

// resolve finds the module spec (required by from) loads, as the executor
// does, and reads it: false when the tree cannot satisfy it.
func (jg *judging) resolve(from, spec string) (string, []byte, bool, error) {
	base := jg.base(from, spec)
	if base == "" {
		return "", nil, false, nil
	}
	candidates := []string{base + ".ts", base + ".js", base + "/index.ts", base + "/index.js"}
	if ext := path.Ext(base); ext == ".ts" || ext == ".js" {
		candidates = append([]string{base}, candidates...)
	}
	for _, c := range candidates {
		if !jg.inTools(c) {
			continue
		}
		r, b, ok, err := jg.load(c)
		if err != nil {
			return "", nil, false, fmt.Errorf("%s requires %q (%s), which cannot be read to judge its risk: %w", from, spec, c, err)
		}
		if ok {
			return r, b, true, nil
		}
	}
	return "", nil, false, nil
}

// load reads candidate c: from its pinned version when there is one, else
// from the tree (false when it is not a file of the tools directory).
func (jg *judging) load(c string) (string, []byte, bool, error) {
	for _, m := range jg.pinned {
		if m.Named(c) {
			return jg.loadPinned(m)
		}
	}
	r, err := jg.jail.Resolve(c)
	if err != nil {
		return "", nil, false, nil // the run refuses this require (vfs.ErrSecurity) or finds nothing
	}
	fi, err := jg.jail.Stat(r)
	if err != nil || fi.IsDir() || !jg.inTools(r) {
		return "", nil, false, nil
	}
	b, err := jg.jail.ReadFile(r)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	return r, b, true, nil
}

// loadPinned reads the version of module m a recorded run ran with.
func (jg *judging) loadPinned(m journal.Module) (string, []byte, bool, error) {
	if jg.source == nil {
		return "", nil, false, fmt.Errorf("the version is pinned to %.12s of %s and no journal is open to read it", m.Hash, m.Path)
	}
	b, err := jg.source(m.Hash)
	if err != nil {
		return "", nil, false, fmt.Errorf("the version is pinned to %.12s of %s, which cannot be read: %w", m.Hash, m.Path, err)
	}
	return m.Path, b, true, nil
}

// ErrGate: the approval gate could not judge a tool (it cannot be read, or
// a module it requires cannot be): the run is refused, never let through.
var ErrGate = errors.New("approval gate")
