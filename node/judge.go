package node

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
	tools = path.Clean(tools)
	j := Judged{Path: p, Src: src, Hash: transpile.Hash(src)}
	top := risk(p, src, j.Hash)
	j.Risk, j.Reasons = top.Risk, top.Reasons
	inTools := func(q string) bool { return tools == "." || strings.HasPrefix(q, tools+"/") }
	seen := map[string]bool{p: true}
	type mod struct {
		path  string
		specs []string
	}
	todo := []mod{{p, top.Modules}}
	var mods []string
	load := func(c string) (string, []byte, bool, error) {
		for _, m := range pinned {
			if m.Named(c) {
				if source == nil {
					return "", nil, false, fmt.Errorf("the version is pinned to %.12s of %s and no journal is open to read it", m.Hash, m.Path)
				}
				b, err := source(m.Hash)
				if err != nil {
					return "", nil, false, fmt.Errorf("the version is pinned to %.12s of %s, which cannot be read: %w", m.Hash, m.Path, err)
				}
				return m.Path, b, true, nil
			}
		}
		r, err := jail.Resolve(c)
		if err != nil {
			if errors.Is(err, vfs.ErrSecurity) {
				return "", nil, false, nil // the run refuses this require
			}
			return "", nil, false, nil
		}
		fi, err := jail.Stat(r)
		if err != nil || fi.IsDir() || !inTools(r) {
			return "", nil, false, nil
		}
		b, err := jail.ReadFile(r)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, false, nil
		}
		if err != nil {
			return "", nil, false, err
		}
		return r, b, true, nil
	}
	for len(todo) > 0 {
		m := todo[0]
		todo = todo[1:]
		for _, spec := range m.specs {
			var base string
			switch {
			case strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == "..":
				base = path.Join(path.Dir(m.path), spec)
			case strings.HasPrefix(spec, vfs.LibMount+"/"):
				base = path.Join(tools, strings.TrimPrefix(spec, vfs.LibMount+"/"))
			case strings.HasPrefix(spec, "/"):
				continue // a mount's generated module (/mcp/...): not in the tree
			default:
				base = path.Join(tools, "vendor", spec)
			}
			if base != tools && !inTools(base) {
				continue // the run refuses it
			}
			candidates := []string{base + ".ts", base + ".js", base + "/index.ts", base + "/index.js"}
			if ext := path.Ext(base); ext == ".ts" || ext == ".js" {
				candidates = append([]string{base}, candidates...)
			}
			for _, c := range candidates {
				if !inTools(c) {
					continue
				}
				r, b, ok, err := load(c)
				if err != nil {
					return Judged{}, fmt.Errorf("%s requires %q (%s), which cannot be read to judge its risk: %w", m.path, spec, c, err)
				}
				if !ok {
					continue
				}
				if !seen[r] {
					seen[r] = true
					if len(seen) > maxJudgedModules {
						return Judged{}, fmt.Errorf("%s requires more than %d modules: the approval gate does not judge so many; split the tool", p, maxJudgedModules)
					}
					h := transpile.Hash(b)
					mods = append(mods, r+"@"+h)
					rated := risk(r, b, h)
					level, why := rated.Risk, rated.Reasons
					for _, f := range rated.Risks {
						f.Module = r
						j.Risks = append(j.Risks, f)
					}
					switch {
					case level.AtLeast(j.Risk) && level != j.Risk:
						j.Risk, j.Reasons = level, nil
						fallthrough
					case level == j.Risk:
						for _, w := range why {
							j.Reasons = append(j.Reasons, r+": "+w)
						}
					}
					todo = append(todo, mod{r, rated.Modules})
				}
				break
			}
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

// ErrGate: the approval gate could not judge a tool (it cannot be read, or
// a module it requires cannot be): the run is refused, never let through.
var ErrGate = errors.New("approval gate")
