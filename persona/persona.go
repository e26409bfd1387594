package persona

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// Persona is one version of a named system prompt.
type Persona struct {
	// Name names the persona: lower-case letters, digits, '-' and '_',
	// starting with a letter or digit, at most 64 bytes.
	Name string `json:"name"`
	// Description says what the persona is for (one line).
	Description string `json:"description,omitempty"`
	// System is the system prompt's text.
	System string `json:"system"`
	// NoProtocol, when true, sends System alone as an agent's system prompt;
	// otherwise the kernel-tools protocol (agent.SystemPrompt) follows it,
	// so that the agent still knows how to use its tools.
	NoProtocol bool `json:"no_protocol,omitempty"`
	// Version is the content hash of System (Version computes it): the
	// same text is the same version, whoever saved it.
	Version string `json:"version"`
	// Parent is the version this one was derived from ("" for a first
	// version), e.g. the base persona of the tournament that chose it.
	Parent string `json:"parent,omitempty"`
	// Origin says how the version was made: "set" (written by a person)
	// or "tournament <run id>".
	Origin string `json:"origin,omitempty"`
	// Created is when the version was saved (UTC, to the second).
	Created time.Time `json:"created,omitzero"`
}

// ErrNotFound is the error of a persona, or a version of one, that does
// not exist (errors.Is); the message lists the known ones.
var ErrNotFound = errors.New("persona not found")

// notFound is an ErrNotFound with its own message.
type notFound struct{ msg string }

func (e notFound) Error() string        { return e.msg }
func (e notFound) Is(target error) bool { return target == ErrNotFound }

func notFoundf(format string, args ...any) error { return notFound{fmt.Sprintf(format, args...)} }

// ErrInvalid is the error of a persona file or name that is malformed.
var ErrInvalid = errors.New("invalid persona")

var nameRE = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,63}$`) // compiled at first use: process start stays cheap

// CheckName reports whether name may name a persona (or a template).
func CheckName(name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("%w: name %q: use lower-case letters, digits, '-' and '_' (at most 64, starting with a letter or digit), e.g. \"sql-analyst\"", ErrInvalid, name)
	}
	return nil
}

// Version returns the version of a system prompt: the first 12 hex digits
// of the SHA-256 of its text with surrounding white space trimmed.
func Version(system string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(system)))
	return hex.EncodeToString(sum[:])[:12]
}

// frontKeys are the front matter's keys, in the order Format writes them.
var frontKeys = []string{"name", "description", "protocol", "version", "parent", "origin", "created"}

// Format renders p as a persona file: a front matter between "---" lines
// (one "key: value" a line) and the system prompt. Version is recomputed
// from System.
func Format(p Persona) []byte {
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\n", p.Name)
	if p.Description != "" {
		fmt.Fprintf(&b, "description: %s\n", oneLine(p.Description))
	}
	if p.NoProtocol {
		b.WriteString("protocol: false\n")
	}
	fmt.Fprintf(&b, "version: %s\n", Version(p.System))
	if p.Parent != "" {
		fmt.Fprintf(&b, "parent: %s\n", p.Parent)
	}
	if p.Origin != "" {
		fmt.Fprintf(&b, "origin: %s\n", oneLine(p.Origin))
	}
	if !p.Created.IsZero() {
		fmt.Fprintf(&b, "created: %s\n", p.Created.UTC().Format(time.RFC3339))
	}
	b.WriteString("---\n")
	b.WriteString(strings.TrimSpace(p.System))
	b.WriteString("\n")
	return []byte(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Parse reads a persona file (see Format). A file without a front matter
// is a system prompt alone. The version is always computed from the text:
// a "version" line that disagrees (the text was edited by hand) is
// ignored. file names the file in errors.
func Parse(file string, b []byte) (Persona, error) {
	var p Persona
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	if rest, ok := strings.CutPrefix(s, "---\n"); ok {
		front, body, err := splitFrontMatter(file, rest)
		if err != nil {
			return p, err
		}
		if err := p.parseFrontMatter(file, front); err != nil {
			return p, err
		}
		s = body
	}
	p.System = strings.TrimSpace(s)
	if p.System == "" {
		return p, fmt.Errorf("%w: %s: the system prompt is empty: write it after the front matter", ErrInvalid, file)
	}
	p.Version = Version(p.System)
	return p, nil
}

// splitFrontMatter splits rest, what follows a file's first "---" line,
// at the "---" line that closes the front matter.
func splitFrontMatter(file, rest string) (front, body string, err error) {
	if front, body, found := strings.Cut(rest, "\n---\n"); found {
		return front, body, nil
	}
	if front, ok := strings.CutSuffix(rest, "\n---"); ok {
		return front, "", nil
	}
	return "", "", fmt.Errorf("%w: %s: the front matter opened by the first \"---\" line is never closed: end it with a \"---\" line before the system prompt", ErrInvalid, file)
}

// parseFrontMatter sets p's fields from the "key: value" lines of front,
// skipping blank lines and # comments.
func (p *Persona) parseFrontMatter(file, front string) error {
	sc := bufio.NewScanner(strings.NewReader(front))
	line := 1
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return fmt.Errorf("%w: %s:%d: %q is not \"key: value\"", ErrInvalid, file, line, l)
		}
		if err := p.set(file, line, strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	return nil
}

// set sets the field of front matter key k to v (read at file:line). The
// version is ignored: it is computed from the text.
func (p *Persona) set(file string, line int, k, v string) error {
	switch k {
	case "name":
		p.Name = v
	case "description":
		p.Description = v
	case "protocol":
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: protocol %q: write true (the kernel-tools protocol follows the prompt, the default) or false", ErrInvalid, file, line, v)
		}
		p.NoProtocol = !on
	case "version":
		// computed by Parse
	case "parent":
		p.Parent = v
	case "origin":
		p.Origin = v
	case "created":
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: created %q is not an RFC 3339 time (2006-01-02T15:04:05Z)", ErrInvalid, file, line, v)
		}
		p.Created = t
	default:
		return fmt.Errorf("%w: %s:%d: unknown key %q: the front matter's keys are %s", ErrInvalid, file, line, k, strings.Join(frontKeys, ", "))
	}
	return nil
}

// Prompt returns the system prompt an agent of this persona is sent:
// System, followed by protocol (the kernel-tools protocol) unless
// NoProtocol is set or protocol is empty.
func (p Persona) Prompt(protocol string) string {
	if p.NoProtocol || protocol == "" {
		return p.System
	}
	return p.System + "\n\n" + protocol
}

// Ref returns "name@version".
func (p Persona) Ref() string { return p.Name + "@" + p.Version }

// SplitRef splits "name" or "name@version".
func SplitRef(ref string) (name, version string) {
	name, version, _ = strings.Cut(ref, "@")
	return name, version
}

// sortByCreated orders versions oldest first (then by version, for a
// stable order).
func sortByCreated(ps []Persona) {
	slices.SortFunc(ps, func(a, b Persona) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
}
