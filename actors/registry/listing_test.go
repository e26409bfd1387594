package registry

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// lstatAll is what a scan of the tool root lstat'ed: every file and link
// but the state directory's.
func (rt *root) lstatAll() map[string]fs.FileInfo {
	rt.t.Helper()
	out := map[string]fs.FileInfo{}
	err := filepath.WalkDir(rt.dir, func(a string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rt.dir, a)
		if d.IsDir() {
			if rel == ".agentos" {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(a)
		out[filepath.ToSlash(rel)] = fi
		return err
	})
	if err != nil {
		rt.t.Fatal(err)
	}
	return out
}

func paths(ts []Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Path)
	}
	return out
}

// TestListedStandsForTheWalk (issue 28 goal 4): Open's Rebuild lists the
// tools from the scan the seed was given (Listed) instead of walking the
// tools directory, and gets what the walk gets; it walks instead when the
// listing cannot stand for the walk: a skipped path that may hold a tool,
// or a symbolic link at, above or under the tools directory. The listing
// here leaves out one tool: a Rebuild that used it does not register it.
func TestListedStandsForTheWalk(t *testing.T) {
	rt := newRoot(t)
	rt.snapTools(10)
	rt.write("tools/notes.md", "not a tool")
	rt.write("tools/.forge/s.ts", "export default function () { return 1; }\n")
	rt.write("tools/vendor/v.ts", "export default function () { return 2; }\n")
	if err := os.Link(filepath.Join(rt.dir, "tools/g2/t002.ts"), filepath.Join(rt.dir, "tools/g2/hard.ts")); err != nil {
		t.Fatal(err)
	}
	ref, err := Open(rt.jail, rt.options())
	if err != nil {
		t.Fatal(err)
	}
	walked := paths(ref.List())
	ref.Close()
	const left = "tools/g1/t001.ts"
	if !slices.Contains(walked, left) || slices.Contains(walked, "tools/g2/t002.ts") {
		t.Fatalf("the walk listed %v", walked)
	}
	all := rt.lstatAll()
	link := func(m map[string]fs.FileInfo, p string) {
		fi, err := os.Lstat(filepath.Join(rt.dir, "tools/g0/t000.ts"))
		if err != nil {
			t.Fatal(err)
		}
		m[p] = linkInfo{fi}
	}
	for _, tc := range []struct {
		name    string
		skipped []string
		link    string // a link the listing holds
		used    bool
	}{
		{name: "the scan's listing", used: true},
		{name: "skipped paths that hold no tool", skipped: []string{"tools/.forge/", "tools/g1/node_modules/", "tools/vendor/", "tools/notes.md", ".agentos/", "other/"}, used: true},
		{name: "a link elsewhere", link: "docs/l.ts", used: true},
		{name: "a skipped directory of tools", skipped: []string{"tools/private/"}},
		{name: "the skipped tools directory", skipped: []string{"tools/"}},
		{name: "a skipped tool", skipped: []string{"tools/g3/x.ts"}},
		{name: "a link under the tools", link: "tools/g4/l.ts"},
		{name: "the tools directory a link", link: "tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := maps.Clone(all)
			delete(files, left)
			if tc.link != "" {
				link(files, tc.link)
			}
			seed := NewSeed()
			seed.Listed(files, tc.skipped)
			opts := rt.options()
			opts.Seed = seed
			r, err := Open(rt.jail, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := paths(r.List())
			want := walked
			if tc.used {
				want = slices.DeleteFunc(slices.Clone(walked), func(p string) bool { return p == left })
			}
			if !slices.Equal(got, want) {
				t.Errorf("registered %v\nwant %v (the listing used: %v)", got, want, tc.used)
			}
		})
	}
}

// linkInfo is a file's stat made to read as a symbolic link's.
type linkInfo struct{ fs.FileInfo }

func (l linkInfo) Mode() fs.FileMode { return fs.ModeSymlink | 0o777 }
