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

	"github.com/agentos-run/agentos/internal/host"
)

// openRoot resolves --root and loads its configuration. The directory MUST
// be a tool root (hold agentos.json): commands MUST NOT create state
// (.agentos/) in a directory the user never initialised.
func openRoot(root string) (string, host.Config, error) { return openDir(root, true) }

// openDir is openRoot; with mustBeRoot false a directory without
// agentos.json is used with the default configuration (check, version,
// exec --no-journal: commands that write nothing there).
func openDir(root string, mustBeRoot bool) (string, host.Config, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", host.Config{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", host.Config{}, usagef("the tool root %s is not a directory: pass --root DIR or run 'agentos init'", abs)
	}
	if mustBeRoot && !isToolRoot(abs) {
		return "", host.Config{}, notRootError(abs)
	}
	cfg, err := host.LoadConfig(abs)
	return abs, cfg, err
}

// toolPath turns the PATH argument into a path relative to the tool root: a
// path that exists under the root as given, else a path relative to the
// current directory (or absolute) that lies inside the root.
func toolPath(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil {
			if fi.IsDir() {
				return "", isDirError(p)
			}
			return filepath.ToSlash(filepath.Clean(p)), nil
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", usagef("no file %s (paths are relative to the tool root %s or to the current directory)", p, root)
	}
	if err == nil && fi.IsDir() {
		return "", isDirError(p)
	}
	if outside(root, abs) {
		return "", usagef("%s is outside the tool root %s: pass --root DIR", p, root)
	}
	rel, _ := filepath.Rel(root, abs)
	return filepath.ToSlash(rel), nil
}

// outside reports whether the absolute path abs lies outside root.
func outside(root, abs string) bool {
	rel, err := filepath.Rel(root, abs)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func isDirError(p string) error {
	return usagef("%s is a directory: give a tool file, e.g. %s/NAME.ts ('agentos call list_files' lists them)", p, strings.TrimSuffix(filepath.ToSlash(p), "/"))
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

// argsObject returns the optional ARGS_JSON argument ({} when absent): a
// JSON object such as example, given inline, as "-" (stdin) or "@FILE",
// at most limit bytes (limits.max_args_bytes).
func argsObject(rest []string, example string, limit int) (json.RawMessage, error) {
	if len(rest) == 0 {
		return json.RawMessage("{}"), nil
	}
	b, err := readArgs(rest[0], limit)
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) || !strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		return nil, usagef("ARGS_JSON must be a JSON object, e.g. '%s' (or - for stdin, @FILE for a file); got %q", example, clip(string(b), 80))
	}
	return json.RawMessage(b), nil
}
