package repo_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// listTools is a Regenerate: meta.json lists the tools under dir/tools.
func listTools(dir string) func() error {
	return func() error {
		var names []string
		err := filepath.WalkDir(filepath.Join(dir, "tools"), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				names = append(names, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return err
		}
		b, _ := json.MarshalIndent(map[string]any{"tools": sorted(names)}, "", "  ")
		tmp := filepath.Join(dir, ".agentos", "meta.json.tmp") // ignored: never committed
		if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dir, "meta.json"))
	}
}

// listing is what listTools writes for the files of a tree.
func listing(files map[string]string) string {
	var names []string
	for p := range files {
		if strings.HasPrefix(p, "tools/") {
			names = append(names, p)
		}
	}
	b, _ := json.MarshalIndent(map[string]any{"tools": sorted(names)}, "", "  ")
	return string(b)
}

func sorted(s []string) []string {
	if s == nil {
		s = []string{}
	}
	sort.Strings(s)
	return s
}
