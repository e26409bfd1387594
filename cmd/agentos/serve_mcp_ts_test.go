package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentos-run/agentos/internal/npmtest"
	"github.com/agentos-run/agentos/kerneltools"
)

// tsSDK is the official MCP TypeScript SDK the client tests use.
const tsSDK = "@modelcontextprotocol/sdk@1.32.2"

// tsReport is what testdata/mcp_ts_client.cjs saw.
type tsReport struct {
	Server         string   `json:"server"`
	ListChangedCap bool     `json:"listChangedCap"`
	Tools          []string `json:"tools"`
	Calls          map[string]struct {
		IsError    bool           `json:"isError"`
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
	} `json:"calls"`
	Failing struct {
		IsError    bool           `json:"isError"`
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
	} `json:"failing"`
	ToolsAfter []string `json:"toolsAfter"`
	Shout      struct {
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structured"`
	} `json:"shout"`
	Progress    []string `json:"progress"`
	Cancel      string   `json:"cancel"`
	AfterCancel bool     `json:"afterCancel"`
	Asked       []string `json:"asked"`
	Risky       struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"risky"`
}

// runTSClient runs the TypeScript client script in mode with env and
// decodes its report.
func runTSClient(t *testing.T, mode string, env ...string) tsReport {
	t.Helper()
	dir := npmtest.Install(t, tsSDK)
	script, err := filepath.Abs(filepath.Join("testdata", "mcp_ts_client.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npmtest.Node(t), script, mode)
	cmd.Env = append(append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules")), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, errb.String())
	}
	var r tsReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("the TypeScript client's report %q: %v\n%s", out.String(), err, errb.String())
	}
	return r
}

// checkTSReport checks what both transports must have seen.
func checkTSReport(t *testing.T, r tsReport) {
	t.Helper()
	if r.Server != "agentos" || !r.ListChangedCap {
		t.Errorf("initialize: server %q, tools.listChanged %v", r.Server, r.ListChangedCap)
	}
	for _, name := range kerneltools.ToolNames() {
		if !slices.Contains(r.Tools, name) {
			t.Errorf("tools/list lacks %s: %v", name, r.Tools)
		}
		c, ok := r.Calls[name]
		if !ok {
			t.Errorf("no call of %s", name)
			continue
		}
		if wantErr := name == "forge_tool"; c.IsError != wantErr && name != "exec_sql" {
			t.Errorf("%s: isError %v: %s", name, c.IsError, c.Text)
		}
	}
	if s := r.Calls["exec_tool"].Structured; s["result"] != 55.0 {
		t.Errorf("exec_tool structuredContent = %v", s)
	}
	if !r.Failing.IsError || !strings.Contains(r.Failing.Text, "tools/none.ts") || r.Failing.Structured["error"] == nil {
		t.Errorf("the failing call: %+v", r.Failing)
	}
	if !slices.Contains(r.ToolsAfter, "text_shout") || slices.Contains(r.Tools, "text_shout") {
		t.Errorf("list_changed: before %v, after %v", r.Tools, r.ToolsAfter)
	}
	if r.Shout.IsError || r.Shout.Structured["loud"] != "HI" {
		t.Errorf("text_shout: %+v", r.Shout)
	}
	if len(r.Progress) == 0 || !strings.Contains(r.Progress[0], "tools/spin.ts") || !strings.Contains(r.Cancel, "enough") || !r.AfterCancel {
		t.Errorf("cancellation: progress %q, the call ended %q, the session after: %v", r.Progress, r.Cancel, r.AfterCancel)
	}
}

// longRunRoot is a tool root whose runs may last (the cancelled spin run
// must not time out first).
func longRunRoot(t *testing.T) string {
	t.Helper()
	root := toolRoot(t, nil)
	p := filepath.Join(root, "agentos.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["limits"] = map[string]any{"timeout": "10m"}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestServeMCPTypeScriptStdio: the official TypeScript SDK's client spawns
// 'agentos serve --mcp' and drives it; it declares elicitation and
// confirms the high-risk tool, which then runs.
func TestServeMCPTypeScriptStdio(t *testing.T) {
	root := longRunRoot(t)
	r := runTSClient(t, "stdio", "AGENTOS_BIN="+os.Args[0], "AGENTOS_ROOT="+root)
	checkTSReport(t, r)
	if r.Risky.IsError || r.Risky.Text != "42" || len(r.Asked) != 1 || !strings.Contains(r.Asked[0], "tools/risky.ts") {
		t.Errorf("the confirmed high-risk tool: %+v, asked %q", r.Risky, r.Asked)
	}
	// The cancelled run is left unfinished (resumable), never ok.
	code, out, stderr := cli(t, "runs", "--root", root, "--json")
	if code != 0 {
		t.Fatalf("runs: %d %s", code, stderr)
	}
	var runs struct {
		Runs []struct{ Tool, Status string } `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatal(err)
	}
	for _, run := range runs.Runs {
		if run.Tool == "tools/spin.ts" && run.Status == "ok" {
			t.Errorf("the cancelled spin run ended %q", run.Status)
		}
	}
}

// TestServeMCPTypeScriptHTTP: the TypeScript SDK's client over streamable
// HTTP with the node's bearer token; it declares no elicitation, so the
// high-risk tool is refused with the reason.
func TestServeMCPTypeScriptHTTP(t *testing.T) {
	root := longRunRoot(t)
	endpoint := startServeHTTP(t, root)
	tok, err := os.ReadFile(filepath.Join(root, MCPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	r := runTSClient(t, "http", "MCP_URL="+endpoint, "MCP_TOKEN="+strings.TrimSpace(string(tok)))
	checkTSReport(t, r)
	if !r.Risky.IsError || !strings.HasPrefix(r.Risky.Text, "confirmation: ") || !strings.Contains(r.Risky.Text, "elicitation") {
		t.Errorf("the unconfirmed high-risk tool: %+v", r.Risky)
	}
}
