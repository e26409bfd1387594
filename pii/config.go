package pii

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/agentos-run/agentos/config"
)

// Default files of the pii section, relative to the tool root.
const (
	DefaultKeyFile = config.StateDir + "/pii.key"
	DefaultMapFile = config.StateDir + "/pii.db"
)

// Config is the "pii" section of agentos.json: PII tokenization (docs/MCP.md): personal data in
// what drivers return is replaced by stable tokens before it can reach a
// model, and restored only on the way out to a driver allowed to see it.
// The zero value is off: nothing is detected, nothing is wrapped.
type Config struct {
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
func (p Config) Enabled() bool {
	return len(p.Detect) > 0 || len(p.Names) > 0 || p.NamesFile != "" || len(p.Patterns) > 0
}

// CustomPatterns returns the custom patterns in name order.
func (p Config) CustomPatterns() []Pattern {
	out := make([]Pattern, 0, len(p.Patterns))
	for name, re := range p.Patterns {
		out = append(out, Pattern{Name: name, Regexp: re})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Validate checks the section without touching a file: the detectors, the
// patterns, restore_to, the paths and the key variable's name.
func (p Config) Validate() error {
	if !p.Enabled() {
		if len(p.RestoreTo) > 0 {
			return fmt.Errorf("pii.restore_to is set but pii detects nothing: add pii.detect, pii.names, pii.names_file or pii.patterns, or remove restore_to")
		}
		return nil
	}
	if _, err := New(Options{Key: make([]byte, MinKeyBytes), Detect: p.Detect, Names: p.Names, Patterns: p.CustomPatterns(), RestoreTo: p.RestoreTo}); err != nil {
		return fmt.Errorf("pii: %w", err)
	}
	for key, f := range map[string]string{"pii.names_file": p.NamesFile, "pii.key_file": p.KeyFile, "pii.map_file": p.MapFile} {
		if f != "" && !config.InsideRoot(f) {
			return fmt.Errorf("%s %q must be a file inside the tool root, written relative to it", key, f)
		}
	}
	// The key lets anyone forge and check tokens; the map is every real
	// value. IMPORTANT: both MUST stay where no tool can read them (a Jail
	// hides the state directory): under tools/, read_file would hand them
	// to a model.
	for key, f := range map[string]string{"pii.key_file": p.KeyFile, "pii.map_file": p.MapFile} {
		if f != "" && !config.UnderStateDir(f) {
			return fmt.Errorf("%s %q is outside %s/, where tools could read it (the key forges tokens, the map holds every real value): put it under %s/, e.g. %q", key, f, config.StateDir, config.StateDir, config.StateDir+"/"+filepath.Base(f))
		}
	}
	if p.KeyEnv != "" && !config.EnvName(p.KeyEnv) {
		return fmt.Errorf("pii.key_env %q is not an environment variable name: name the variable that holds the key, e.g. \"AGENTOS_PII_KEY\" (the key itself never goes in this file)", p.KeyEnv)
	}
	return nil
}
