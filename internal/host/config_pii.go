package host

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/pii"
)

// PIIConfig configures PII tokenization (docs/MCP.md): personal data in
// what drivers return is replaced by stable tokens before it can reach a
// model, and restored only on the way out to a driver allowed to see it.
// The zero value is off: nothing is detected, nothing is wrapped.
type PIIConfig struct {
	// Detect names the built-in detectors: "email", "phone".
	Detect []string `json:"detect,omitempty"`
	// Names are personal names to replace, matched as whole words ignoring
	// case.
	Names []string `json:"names,omitempty"`
	// NamesFile is a root-relative file of more names, one a line (blank
	// lines and lines starting with # are skipped).
	NamesFile string `json:"names_file,omitempty"`
	// Patterns are custom detectors: a name (lower case letters and
	// digits: the tokens' kind) -> a Go (RE2) regexp.
	Patterns map[string]string `json:"patterns,omitempty"`
	// RestoreTo lists the drivers whose requests get the real values back:
	// "sql", "fetch", "fetch:<URL prefix>", "mcp", "mcp:<server>",
	// "mcp:<server>/<tool>", or another driver's name. Default: none.
	RestoreTo []string `json:"restore_to,omitempty"`
	// KeyEnv names an environment variable holding the tokens' key (at
	// least 32 random bytes as hex or base64): nodes sharing a journal
	// MUST share it. Unset: the key file.
	KeyEnv string `json:"key_env,omitempty"`
	// KeyFile is the root-relative file of the tokens' key, created (0600,
	// 32 random bytes) when missing. It MUST be under .agentos/, which no
	// tool can read (refused at load otherwise). Default ".agentos/pii.key".
	KeyFile string `json:"key_file,omitempty"`
	// MapFile is the root-relative bbolt file of the token map (0600). It
	// MUST be under .agentos/, which no tool can read (refused at load
	// otherwise). Default ".agentos/pii.db".
	MapFile string `json:"map_file,omitempty"`
}

// Enabled reports whether anything is detected.
func (p PIIConfig) Enabled() bool {
	return len(p.Detect) > 0 || len(p.Names) > 0 || p.NamesFile != "" || len(p.Patterns) > 0
}

// patterns returns the custom patterns in name order.
func (p PIIConfig) patterns() []pii.Pattern {
	out := make([]pii.Pattern, 0, len(p.Patterns))
	for name, re := range p.Patterns {
		out = append(out, pii.Pattern{Name: name, Regexp: re})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// validate checks the section without touching a file: the detectors, the
// patterns, restore_to, the paths and the key variable's name.
func (p PIIConfig) validate(path string) error {
	if !p.Enabled() {
		if len(p.RestoreTo) > 0 {
			return fmt.Errorf("%s: pii.restore_to is set but pii detects nothing: add pii.detect, pii.names, pii.names_file or pii.patterns, or remove restore_to", path)
		}
		return nil
	}
	if _, err := pii.New(pii.Options{Key: make([]byte, pii.MinKeyBytes), Detect: p.Detect, Names: p.Names, Patterns: p.patterns(), RestoreTo: p.RestoreTo}); err != nil {
		return fmt.Errorf("%s: pii: %w", path, err)
	}
	for key, f := range map[string]string{"pii.names_file": p.NamesFile, "pii.key_file": p.KeyFile, "pii.map_file": p.MapFile} {
		if f != "" && (filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..")) {
			return fmt.Errorf("%s: %s %q must be a file inside the tool root, written relative to it", path, key, f)
		}
	}
	// The key lets anyone forge and check tokens; the map is every real
	// value. IMPORTANT: both MUST stay where no tool can read them (a Jail
	// hides the state directory): under tools/, read_file would hand them
	// to a model.
	for key, f := range map[string]string{"pii.key_file": p.KeyFile, "pii.map_file": p.MapFile} {
		if f != "" && !underStateDir(f) {
			return fmt.Errorf("%s: %s %q is outside %s/, where tools could read it (the key forges tokens, the map holds every real value): put it under %s/, e.g. %q", path, key, f, StateDir, StateDir, filepath.ToSlash(filepath.Join(StateDir, filepath.Base(f))))
		}
	}
	if p.KeyEnv != "" && !envName().MatchString(p.KeyEnv) {
		return fmt.Errorf("%s: pii.key_env %q is not an environment variable name: name the variable that holds the key, e.g. \"AGENTOS_PII_KEY\" (the key itself never goes in this file)", path, p.KeyEnv)
	}
	return nil
}

// underStateDir reports whether the root-relative path f names a file
// inside the state directory (not the directory itself).
func underStateDir(f string) bool {
	c := filepath.ToSlash(filepath.Clean(f))
	return strings.HasPrefix(c, filepath.ToSlash(StateDir)+"/")
}

// Default files of the pii section, relative to the tool root.
var (
	PIIKeyFile = filepath.Join(StateDir, "pii.key")
	PIIMapFile = filepath.Join(StateDir, "pii.db")
)

// OpenPII returns the tokenizer of the tool root at root (nil, nil when
// the pii section detects nothing): the key from pii.key_env or the key
// file (made at the first use), the names file read, the token map's file
// opened at its first use. The caller MUST Close the returned map.
func (c Config) OpenPII(root string) (*pii.Tokenizer, *pii.BoltMap, error) {
	p := c.PII
	if !p.Enabled() {
		return nil, nil, nil
	}
	// A Config built in code may not have been loaded: the paths are
	// checked here too, before any file is made.
	if err := p.validate("agentos.Config"); err != nil {
		return nil, nil, err
	}
	key, err := p.key(root)
	if err != nil {
		return nil, nil, err
	}
	names := p.Names
	if p.NamesFile != "" {
		more, err := readNames(filepath.Join(root, p.NamesFile))
		if err != nil {
			return nil, nil, err
		}
		names = append(append([]string{}, names...), more...)
	}
	m := pii.OpenBoltMap(filepath.Join(root, orDefault(p.MapFile, PIIMapFile)))
	t, err := pii.New(pii.Options{Key: key, Detect: p.Detect, Names: names, Patterns: p.patterns(), RestoreTo: p.RestoreTo, Map: m})
	if err != nil {
		return nil, nil, fmt.Errorf("agentos: pii: %w", err)
	}
	return t, m, nil
}

// key returns the tokens' key: pii.key_env's, or the key file's, made
// (0600, 32 random bytes) when it does not exist.
func (p PIIConfig) key(root string) ([]byte, error) {
	if p.KeyEnv != "" {
		v := os.Getenv(p.KeyEnv)
		if v == "" {
			return nil, fmt.Errorf("agentos: pii.key_env names %s, which is not set: export the key in it (at least %d random bytes as hex or base64, e.g. `openssl rand -hex 32`; the same on every node sharing the journal), or remove the setting to use %s", p.KeyEnv, capability.MinKeyBytes, PIIKeyFile)
		}
		key, err := capability.ParseKey(v)
		if err != nil {
			return nil, fmt.Errorf("agentos: the pii key in %s: %w", p.KeyEnv, err)
		}
		return key, nil
	}
	path := filepath.Join(root, orDefault(p.KeyFile, PIIKeyFile))
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("agentos: making the pii key's directory: %w", err)
		}
		// Written aside, then linked into place: another process never
		// reads half a key, and never overwrites one.
		f, err := os.CreateTemp(filepath.Dir(path), ".pii-key-*")
		if err != nil {
			return nil, fmt.Errorf("agentos: making the pii key %s: %w", path, err)
		}
		defer os.Remove(f.Name())
		_, err = f.Write(key)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Link(f.Name(), path)
		}
		if errors.Is(err, fs.ErrExist) { // made meanwhile by another process
			return p.key(root)
		}
		if err != nil {
			return nil, fmt.Errorf("agentos: writing the pii key %s: %w", path, err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agentos: reading the pii key %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("agentos: the pii key %s is readable by others (%s): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if len(key) < pii.MinKeyBytes {
		return nil, fmt.Errorf("agentos: the pii key %s has %d bytes, fewer than %d: delete it to have a new one made (the tokens change) or restore it from a backup", path, len(key), pii.MinKeyBytes)
	}
	return key, nil
}

// readNames reads a names file: one a line, # comments, blank lines.
func readNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agentos: pii.names_file: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}
