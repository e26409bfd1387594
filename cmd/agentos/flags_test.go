package main

import (
	"encoding/json"
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
