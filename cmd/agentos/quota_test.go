package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// agentosCmd runs the agentos command as a real process (this test binary
// in command mode) and returns its exit code and output.
func agentosCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// quotaRoot makes a tool root without Git whose agentos.json carries extra
// settings (merged over what init writes).
func quotaRoot(t *testing.T, extra string) string {
	t.Helper()
	root := t.TempDir()
	if code, _, stderr := cli(t, "init", "--no-git", root); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	var cfg map[string]any
	path := filepath.Join(root, "agentos.json")
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(extra), &cfg); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// Issue 10, item 9: with quota tool_calls 3, six `agentos call`
// invocations without a node all succeeded: every invocation started a
// runtime with a fresh account. Use is now kept per account in
// .agentos/quota.db: the fourth invocation is refused with the quota and
// how to reset it, `agentos quota` shows the use, and `agentos quota reset`
// clears it.
func TestQuotaPersistsAcrossInvocations(t *testing.T) {
	for _, c := range []struct{ name, cfg, account string }{
		{"node", `{"isolation": "inprocess", "quota": {"tool_calls": 3}}`, "node"},
		{"agent", `{"isolation": "inprocess", "agent": {"quota": {"tool_calls": 3}}}`, "process:agent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := quotaRoot(t, c.cfg)
			for i := 1; i <= 6; i++ {
				code, stdout, stderr := agentosCmd(t, "call", "--root", root, "list_files", `{"dir":"tools"}`)
				switch {
				case i <= 3 && code != 0:
					t.Fatalf("call %d of a quota of 3: exit %d: %s %s", i, code, stdout, stderr)
				case i > 3 && (code != 1 || !strings.Contains(stderr, "quota:tool_calls") || !strings.Contains(stderr, "agentos quota reset")):
					t.Fatalf("call %d of a quota of 3: exit %d, stderr %q; want the quota refusal and how to reset it", i, code, stderr)
				}
			}
			code, stdout, stderr := agentosCmd(t, "quota", "--root", root, "--json")
			var out struct {
				Accounts []struct {
					Account string             `json:"account"`
					Spent   map[string]float64 `json:"spent"`
				} `json:"accounts"`
			}
			err := json.Unmarshal([]byte(stdout), &out)
			rows := out.Accounts
			if code != 0 || err != nil {
				t.Fatalf("quota --json: %d %q %q %v", code, stdout, stderr, err)
			}
			found := false
			for _, r := range rows {
				found = found || r.Account == c.account && r.Spent["tool_calls"] == 3
			}
			if !found {
				t.Fatalf("quota --json = %s, want %s with 3 tool_calls spent", stdout, c.account)
			}
			if code, _, stderr := agentosCmd(t, "quota", "reset", "--root", root); code != 0 {
				t.Fatalf("quota reset: %d %s", code, stderr)
			}
			if code, _, stderr := agentosCmd(t, "call", "--root", root, "list_files", `{"dir":"tools"}`); code != 0 {
				t.Fatalf("a call after the reset: %d %s", code, stderr)
			}
		})
	}
}
