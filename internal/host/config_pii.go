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
	"strings"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/pii"
)

// Default files of the pii section, relative to the tool root.
var (
	PIIKeyFile = filepath.FromSlash(pii.DefaultKeyFile)
	PIIMapFile = filepath.FromSlash(pii.DefaultMapFile)
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
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("agentos.Config: %w", err)
	}
	key, err := piiKey(p, root)
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
	t, err := pii.New(pii.Options{Key: key, Detect: p.Detect, Names: names, Patterns: p.CustomPatterns(), RestoreTo: p.RestoreTo, Map: m})
	if err != nil {
		return nil, nil, fmt.Errorf("agentos: pii: %w", err)
	}
	return t, m, nil
}

// piiKey returns the tokens' key: pii.key_env's, or the key file's, made
// (0600, 32 random bytes) when it does not exist.
func piiKey(p pii.Config, root string) ([]byte, error) {
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
			return piiKey(p, root)
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
