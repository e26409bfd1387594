package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 25, item 12: an unknown flag is named, as the user typed it, by
// every verb and subcommand, with exit 2 and (under --json) one usage
// error object. 'cluster --bogus-flag' said only that cluster takes a
// subcommand; the others said "flag provided but not defined: -bogus-flag".
func TestEveryVerbNamesAnUnknownFlag(t *testing.T) {
	t.Chdir(t.TempDir()) // not a tool root: nothing may be created or found
	verbs := [][]string{}
	for _, c := range commands {
		verbs = append(verbs, []string{c.name})
	}
	for _, sub := range [][]string{
		{"runs", "prune"}, {"token", "revoke"}, {"token", "list"}, {"cluster", "status"}, {"cluster", "certs"},
		{"persona", "list"}, {"persona", "show"}, {"persona", "versions"}, {"persona", "set"},
		{"memory", "list"}, {"memory", "show"}, {"memory", "recall"}, {"memory", "remember"}, {"memory", "forget"},
		{"quota", "reset"}, {"doctor", "llm"},
	} {
		verbs = append(verbs, sub)
	}
	for _, v := range verbs {
		for _, flag := range []string{"--bogus-flag", "-bogus-flag", "--bogus-flag=1"} {
			args := append(append([]string{}, v...), flag)
			code, stdout, stderr := cli(t, args...)
			name := strings.SplitN(flag, "=", 2)[0]
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, "unknown flag "+name+" ") {
				t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 naming the flag %s", args, code, stdout, stderr, name)
			}
		}
		args := append(append([]string{}, v...), "--bogus-flag", "--json")
		code, stdout, _ := cli(t, args...)
		var out struct {
			Error struct{ Kind, Message string }
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != exitUsage || out.Error.Kind != "usage" || !strings.Contains(out.Error.Message, "unknown flag --bogus-flag") {
			t.Errorf("%q: exit %d stdout %q (%v); want one JSON usage error naming --bogus-flag", args, code, stdout, err)
		}
	}
}

// Issue 25, item 12: 'persona show NAME@V' takes the version exactly as
// 'persona versions' prints it, in its table and in its --json; a version
// it does not know exits 2 naming the ones it has.
func TestPersonaShowTakesTheVersionVersionsPrints(t *testing.T) {
	root := filepath.Join(t.TempDir(), "r")
	if code, _, stderr := cli(t, "init", "--no-git", root); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	for _, text := range []string{"You are the first.", "You are the second."} {
		if code, _, stderr := cli(t, "persona", "--root", root, "set", "bob", "--text", text); code != 0 {
			t.Fatalf("persona set: %s", stderr)
		}
	}
	code, stdout, _ := cli(t, "persona", "--root", root, "--json", "versions", "bob")
	var vs struct {
		Versions []struct{ Version, System string }
	}
	if err := json.Unmarshal([]byte(stdout), &vs); err != nil || code != 0 || len(vs.Versions) != 2 {
		t.Fatalf("persona versions --json: %d %v %s", code, err, stdout)
	}
	system := map[string]string{}
	for _, v := range vs.Versions {
		system[v.Version] = v.System
		code, stdout, stderr := cli(t, "persona", "--root", root, "--json", "show", "bob@"+v.Version)
		if code != 0 || !strings.Contains(stdout, v.System) {
			t.Fatalf("persona show bob@%s (from --json): %d %q %q", v.Version, code, stdout, stderr)
		}
	}
	code, stdout, stderr := cli(t, "persona", "--root", root, "versions", "bob")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "VERSION") {
		t.Fatalf("persona versions: %d %q\n%s", code, stderr, stdout)
	}
	for _, line := range lines[1:] {
		v := strings.Fields(line)[0]
		code, stdout, stderr := cli(t, "persona", "--root", root, "show", "bob@"+v)
		if want, ok := system[v]; !ok || code != 0 || !strings.Contains(stdout, "version: "+v) || !strings.Contains(stdout, want) {
			t.Fatalf("persona show bob@%s (from the table): %d %q %q", v, code, stdout, stderr)
		}
	}
	first := vs.Versions[0].Version
	code, _, stderr = cli(t, "persona", "--root", root, "show", "bob@7")
	if code != exitUsage || !strings.Contains(stderr, `has no version "7"`) || !strings.Contains(stderr, first) {
		t.Fatalf("persona show bob@7: %d %q; want exit 2 naming the versions", code, stderr)
	}
}
