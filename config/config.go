package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// Names of the configuration and of the state directory of a tool root.
const (
	// File is the tool root's configuration.
	File = "agentos.json"
	// Doc is the page that documents every key of File; every
	// configuration error points to it.
	Doc = "docs/CONFIG.md"
	// StateDir is agentos' own state under the tool root (journal, caches,
	// keys); never visible to tools.
	StateDir = ".agentos"
)

// Validator is a section, or the whole schema, that checks its values.
// Validate MUST NOT touch a file or the environment: it says what is wrong
// with the values as written and what to write instead, naming the key
// (e.g. "memory.window_tokens 100 is too small ..."); Load prefixes the
// file.
type Validator interface {
	Validate() error
}

// Load reads the tool root's File under root into v (a pointer to the
// schema's struct) and validates it when v implements Validator. A missing
// file leaves v as it is (the defaults) and is no error. It reads the file
// once and decodes it once (see Decode); every error names the file and
// points to Doc.
func Load(root string, v any) error {
	path := filepath.Join(root, File)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := Decode(path, b, v); err != nil {
		return err
	}
	if s, ok := v.(Validator); ok {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%s: %w (every key of %s is documented in %s)", path, err, File, Doc)
		}
	}
	return nil
}

// Duration is a time.Duration written in JSON as a string such as "1.5s".
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string ("500ms", "5s").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"5s\" or \"500ms\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: use a form such as \"5s\" or \"500ms\"", s)
	}
	if v <= 0 {
		return fmt.Errorf("duration %q must be positive", s)
	}
	*d = Duration(v)
	return nil
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvName reports whether s is an environment variable's name, the form a
// *_env key takes (the secret itself never goes in the file).
func EnvName(s string) bool { return envName().MatchString(s) }

// InsideRoot reports whether the path p, as written in the file, stays
// inside the tool root: relative, and not climbing out with "..".
func InsideRoot(p string) bool {
	return !filepath.IsAbs(p) && !strings.HasPrefix(p, "/") && !strings.HasPrefix(filepath.Clean(p), "..")
}

// UnderStateDir reports whether the root-relative path f names a file
// inside StateDir (not the directory itself), where no tool can read it.
func UnderStateDir(f string) bool {
	c := filepath.ToSlash(filepath.Clean(f))
	return strings.HasPrefix(c, StateDir+"/")
}
