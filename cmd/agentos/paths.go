package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentos-run/agentos"
)

// openRoot resolves --root and loads its configuration.
func openRoot(root string) (string, agentos.Config, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", agentos.Config{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", agentos.Config{}, usagef("the tool root %s is not a directory: pass --root DIR or run 'agentos init'", abs)
	}
	cfg, err := agentos.LoadConfig(abs)
	return abs, cfg, err
}

// rootedTool resolves --root and the PATH argument of check and exec: the
// absolute tool root, its configuration, and PATH relative to it.
func rootedTool(root, path string) (absRoot string, cfg agentos.Config, rel string, err error) {
	if absRoot, cfg, err = openRoot(root); err != nil {
		return "", cfg, "", err
	}
	rel, err = toolPath(absRoot, path)
	return absRoot, cfg, rel, err
}

// toolPath turns the PATH argument into a path relative to the tool root: a
// path that exists under the root as given, else a path relative to the
// current directory (or absolute) that lies inside the root.
func toolPath(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return filepath.ToSlash(filepath.Clean(p)), nil
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return "", usagef("no file %s (paths are relative to the tool root %s or to the current directory)", p, root)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", usagef("%s is outside the tool root %s: pass --root DIR", p, root)
	}
	return filepath.ToSlash(rel), nil
}

func fprintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON output: %w", err)
	}
	return nil
}

// argsObject returns the optional ARGS_JSON argument ({} when absent); it
// must be a JSON object such as example.
func argsObject(rest []string, example string) (json.RawMessage, error) {
	if len(rest) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(rest[0])) || !strings.HasPrefix(strings.TrimSpace(rest[0]), "{") {
		return nil, usagef("ARGS_JSON must be a JSON object, e.g. '%s'; got %q", example, rest[0])
	}
	return json.RawMessage(rest[0]), nil
}
