package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/internal/npmtest"
)

// The official MCP conformance suite, and glob: on Node 20 (no
// fs.globSync) the suite's entry is shimmed to take globSync from glob.
const (
	conformanceSuite = "@modelcontextprotocol/conformance@0.1.16"
	conformanceGlob  = "glob@11.1.0"
)

// conformanceApplies are the server scenarios of the suite that apply to
// agentos: every one MUST pass against one node. The generic ones need no
// fixture; the others are served by the sample tools and personas of
// examples/mcp-serve/conformance (docs/MCP.md, "Conformance", says why
// each other scenario does not apply).
var conformanceApplies = []string{
	"server-initialize", "logging-set-level", "ping", "tools-list",
	"server-sse-multiple-streams", "resources-list", "prompts-list", "dns-rebinding-protection",
	"completion-complete",
	"tools-call-simple-text", "tools-call-error", "tools-call-with-progress",
	"prompts-get-simple", "prompts-get-with-args",
}

// conformanceFixture is where the sample tools and personas the suite's
// scenarios call are kept (tools/, personas/), copied into the node's root.
var conformanceFixture = filepath.Join("..", "..", "examples", "mcp-serve", "conformance")

// copyFixture copies the files under conformanceFixture into root.
func copyFixture(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(conformanceFixture, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(conformanceFixture, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// conformanceLine is one line of the suite's summary.
var conformanceLine = regexp.MustCompile(`(?m)^([✓✗]) ([a-z0-9-]+): (\d+) passed, (\d+) failed`)

// conformanceEntry returns the suite's entry point in dir, shimmed for a
// node without fs.globSync (Node 20): a copy next to the original (so that
// its imports resolve), importing globSync from the glob package instead.
func conformanceEntry(t *testing.T, node, dir string) string {
	t.Helper()
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if exec.Command(node, "-e", "process.exit(require('fs').globSync ? 0 : 1)").Run() == nil {
		return entry
	}
	shim := strings.TrimSuffix(entry, ".js") + ".node20.js"
	if _, err := os.Stat(shim); err == nil {
		return shim
	}
	src, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	imp := regexp.MustCompile(`import\{([^}]*)\}from"fs";`).FindSubmatchIndex(src)
	if imp == nil {
		t.Fatalf("%s: no import from \"fs\" to shim (a new version of the suite?)", entry)
	}
	var rest, glob []string
	for _, n := range strings.Split(string(src[imp[2]:imp[3]]), ",") {
		if strings.HasPrefix(n, "globSync") {
			glob = append(glob, n)
		} else {
			rest = append(rest, n)
		}
	}
	if len(glob) != 1 {
		t.Fatalf("%s: imports no globSync from \"fs\" (a new version of the suite?)", entry)
	}
	out := string(src[:imp[0]]) + `import{` + strings.Join(rest, ",") + `}from"fs";import{` + glob[0] + `}from"glob";` + string(src[imp[1]:])
	tmp := shim + ".tmp" + time.Now().Format("150405.000000000")
	if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, shim); err != nil {
		t.Fatal(err)
	}
	return shim
}

// Issue 25 item 13: the official MCP conformance suite's server scenarios,
// run one after the other against ONE 'serve --mcp-http' node. Its client
// never closes its sessions (no HTTP DELETE): past 16 sessions the node
// answered 429 and only 5 of 31 scenarios passed. Now the least recently
// used idle session makes room, and every generic scenario passes.
// Issue 29 item 2: completions, and the scenarios the sample tools and
// personas of examples/mcp-serve/conformance serve, pass too (8 of 30
// before, 14 after); docs/MCP.md says why each other one does not apply.
func TestServeMCPConformanceSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs the MCP conformance suite")
	}
	node := npmtest.Node(t)
	dir := npmtest.Install(t, conformanceSuite, conformanceGlob)
	entry := conformanceEntry(t, node, dir)

	root := toolRoot(t, nil)
	copyFixture(t, root)
	p := filepath.Join(root, "agentos.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	// The suite's client sends no token; it reads the personas as prompts.
	cfg["mcp"] = map[string]any{"serve": map[string]any{"allow_anonymous": true}}
	grants := []map[string]string{{"right": "read", "scope": "tools/"}, {"right": "exec", "scope": "tools/"}, {"right": "read", "scope": "personas/"}}
	cfg["agent"] = map[string]any{"grants": grants}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := startServeHTTP(t, root)

	cmd := exec.Command(node, entry, "server", "--url", endpoint)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // exits 1 when a scenario fails: the summary says which
	var passed, failed []string
	for _, m := range conformanceLine.FindAllStringSubmatch(string(out), -1) {
		if m[1] == "✓" && m[4] == "0" {
			passed = append(passed, m[2])
		} else {
			failed = append(failed, m[2])
		}
	}
	if len(passed)+len(failed) == 0 {
		t.Fatalf("the conformance suite printed no summary:\n%s", out)
	}
	t.Logf("conformance against one node: %d of %d scenarios pass: %v; failing (they do not apply, docs/MCP.md): %v", len(passed), len(passed)+len(failed), passed, failed)
	for _, s := range conformanceApplies {
		if !slices.Contains(passed, s) {
			t.Errorf("scenario %s failed against one node:\n%s", s, out)
		}
	}
}
