package node

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
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
}

// RiskFunc rates the source src of the module at path, whose content hash
// is hash.
type RiskFunc func(path string, src []byte, hash string) (check.Risk, []string)

// maxJudgedModules bounds the modules the gate follows from one entry.
const maxJudgedModules = 256

// requireRE finds the module specs a source names: require("x"),
// import("x"), import "x", ... from "x". It finds more than the executor
// loads (a spec in a comment or a string): a module found but never
// required only makes the judgment stricter.
var requireRE = regexp.MustCompile(`(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s*|\bimport\s+)["'` + "`" + `]([^"'` + "`" + `\n]+)["'` + "`" + `]`)

// Judge judges the tool at path (resolved, relative to the root of jail)
// with entry source src: the entry and, transitively, every module it
// requires from the tools directory tools, resolved as the executor does
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
	j.Risk, j.Reasons = risk(p, src, j.Hash)
	inTools := func(q string) bool { return tools == "." || strings.HasPrefix(q, tools+"/") }
	seen := map[string]bool{p: true}
	type mod struct {
		path string
		src  []byte
	}
	todo := []mod{{p, src}}
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
		for _, sm := range requireRE.FindAllSubmatch(m.src, -1) {
			spec := string(sm[1])
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
					level, why := risk(r, b, h)
					switch {
					case level.AtLeast(j.Risk) && level != j.Risk:
						j.Risk, j.Reasons = level, nil
						fallthrough
					case level == j.Risk:
						for _, w := range why {
							j.Reasons = append(j.Reasons, r+": "+w)
						}
					}
					todo = append(todo, mod{r, b})
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
