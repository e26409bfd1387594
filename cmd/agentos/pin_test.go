package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// The CLI of runs pinned to exact versions: a tool requiring /lib/lib/fmt
// is run, then the library and the tool change and the library is deleted;
// 'runs --tool' lists the runs by version, 'exec PATH@HASH' runs the old
// version with its old library, 'replay' gives the old result, and an
// unknown version says which exist.
func TestPinnedVersionsFromTheCLI(t *testing.T) {
	root := toolRoot(t, map[string]string{
		"tools/lib/fmt.ts": "export function money(n: number): string { return 'EUR ' + n; }\n",
		"tools/total.ts":   "const f = require('/lib/lib/fmt');\nexport default function (args: { n: number }) { return f.money(args.n); }\n",
	})
	exec := func(path, args string) (code int, res struct {
		Success bool   `json:"success"`
		Result  string `json:"result"`
		Hash    string `json:"hash"`
		Run     string `json:"run"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}) {
		t.Helper()
		code, stdout, stderr := cli(t, "exec", "--root", root, "--json", path, args)
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("exec %s: %d %q %q", path, code, stdout, stderr)
		}
		return code, res
	}
	_, first := exec("tools/total.ts", `{"n": 3}`)
	if !first.Success || first.Result != "EUR 3" {
		t.Fatalf("%+v", first)
	}
	os.WriteFile(filepath.Join(root, "tools/total.ts"), []byte("const f = require('/lib/lib/fmt');\nexport default function (args: { n: number }) { return 'total ' + f.money(args.n); }\n"), 0o644)
	os.WriteFile(filepath.Join(root, "tools/lib/fmt.ts"), []byte("export function money(n: number): string { return 'USD ' + n; }\n"), 0o644)
	if _, now := exec("tools/total.ts", `{"n": 3}`); now.Result != "total USD 3" {
		t.Fatalf("%+v", now)
	}
	if err := os.Remove(filepath.Join(root, "tools/lib/fmt.ts")); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := cli(t, "runs", "--root", root, "--tool", "tools/total.ts")
	if code != 0 || !strings.Contains(stdout, first.Run) || !strings.Contains(stdout, first.Hash[:12]) || !strings.Contains(stdout, "tools/lib/fmt.ts@") || !strings.Contains(stdout, "versions of tools/total.ts") {
		t.Fatalf("runs --tool: %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "runs", "--root", root, "--tool", "./tools/total.ts", "--json")
	var listed struct {
		Runs []struct {
			ID      string `json:"id"`
			Hash    string `json:"hash"`
			Commit  string `json:"commit"`
			Modules []struct {
				Path string `json:"path"`
				Hash string `json:"hash"`
			} `json:"modules"`
		} `json:"runs"`
		Versions []struct {
			Hash string `json:"hash"`
			Runs int    `json:"runs"`
		} `json:"versions"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil || code != 0 || len(listed.Runs) != 2 || len(listed.Versions) != 2 ||
		listed.Versions[1].Hash != first.Hash || len(listed.Runs[0].Modules) != 1 || listed.Runs[0].Modules[0].Path != "tools/lib/fmt.ts" {
		t.Fatalf("runs --tool --json: %d %q %v", code, stdout, err)
	}

	// The runs record the commit the tool tree (a Git working tree) was at.
	repo, err := gogit.PlainOpen(root)
	if err != nil {
		t.Fatal(err)
	}
	if c := listed.Runs[0].Commit; c == "" {
		t.Fatal("the run recorded no commit")
	} else if _, err := repo.CommitObject(plumbing.NewHash(c)); err != nil {
		t.Fatalf("the recorded commit %s is not in the tool root's repository: %v", c, err)
	}
	code, old := exec("tools/total.ts@"+first.Hash[:8], `{"n": 4}`)
	if code != 0 || old.Result != "EUR 4" || old.Hash != first.Hash {
		t.Fatalf("exec by version: %d %+v", code, old)
	}
	code, stdout, stderr = cli(t, "replay", "--root", root, first.Run)
	if code != 0 || !strings.Contains(stdout, "same result as recorded") || !strings.Contains(stdout, "tools/lib/fmt.ts@") {
		t.Fatalf("replay: %d %q %q", code, stdout, stderr)
	}
	code, bad := exec("tools/total.ts@0000000000", `{"n": 4}`)
	if code != 1 || bad.Success || bad.Run != "" || !strings.Contains(bad.Error.Message, "tools/total.ts@"+first.Hash[:12]) {
		t.Fatalf("unknown version: %d %+v", code, bad)
	}
	code, _, stderr = cli(t, "exec", "--root", root, "--no-journal", "tools/total.ts@"+first.Hash[:8], `{"n": 4}`)
	if code != 2 || !strings.Contains(stderr, "--no-journal") {
		t.Fatalf("--no-journal: %d %q", code, stderr)
	}
	code, stdout, stderr = cli(t, "call", "--root", root, "exec_tool", `{"path": "tools/total.ts@`+first.Hash[:8]+`", "args": {"n": 5}}`)
	if code != 0 || !strings.Contains(stdout, "EUR 5") {
		t.Fatalf("call exec_tool by version: %d %q %q", code, stdout, stderr)
	}
}
