package host

import (
	"github.com/agentos-run/agentos/journal"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/capability"
)

func TestInitIsIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	created, err := Init(dir, InitOptions{NoGit: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tools/", ConfigFile, RegistryFile, ".gitignore"}; !reflect.DeepEqual(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"tools":{"x":{}}}`), 0o644)
	again, err := Init(dir, InitOptions{NoGit: true})
	if err != nil || len(again) != 0 {
		t.Fatalf("second Init created %v, %v", again, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, RegistryFile)); string(b) != `{"tools":{"x":{}}}` {
		t.Fatal("Init overwrote an existing file")
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := cfg.ExecutorOptions(dir)
	if opts.Isolation != executor.IsolationProcess || opts.Limits.Timeout != 5*time.Second || opts.Limits.MemoryBytes != 256<<20 || opts.ToolsDir != "tools" {
		t.Fatalf("the scaffolded config does not spell out the defaults: %+v", opts)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"isolaton": "process"}`, `unknown field "isolaton"`},
		{`{"isolation": "vm"}`, `isolation "vm" is not known`},
		{`{"limits": {"timeout": 5}}`, `a duration must be a string`},
		{`{"limits": {"timeout": "5 secs"}}`, `bad duration "5 secs"`},
		{`{"write_dirs": ["../up"]}`, `must be a directory inside the tool root`},
		{`{`, `unexpected EOF`},
		{`{"quota": {"tokens": 5}}`, `quota has an unknown meter "tokens"`},
		{`{"agent": {"quota": {"tool_calls": -1}}}`, `agent.quota.tool_calls must not be negative`},
		{`{"agent": {"grants": [{"right": "sudo"}]}}`, `agent.grants has an unknown right "sudo"`},
		{`{"agent": {"grants": [{"right": "read", "scop": "tools/"}]}}`, `unknown field "scop"`},
		{`{"journal": "/var/j.db"}`, `must be a directory inside the tool root`},
		{`{"git": {"strategy": "merge"}}`, `git.strategy "merge" is not known`},
		{`{"git": {"upstream": "https://bot:tok@example.com/t.git"}}`, `git.upstream carries credentials`},
		{`{"reuse_threshold": 2}`, `reuse_threshold 2 must be between 0 and 1`},
		{`{"fetch": {"allow": ["api.example.com"]}}`, `fetch.allow "api.example.com" must be an http(s) URL prefix`},
		{`{"limits": {"max_args_bytes": -1}}`, `limits must not be negative`},
		{`{"retention": {"keep_days": -2}}`, `retention values must be positive, 0 for the default or -1`},
		{`{"retention": {"keep_for": 3}}`, `unknown field "keep_for"`},
		{`{"journal_durability": "fsync"}`, `journal_durability "fsync" is not a mode`},
		{`{"llm": {"base_url": "http://127.0.0.1:/v1"}}`, `llm.base_url "http://127.0.0.1:/v1" has an empty port`},
		{`{"llm": {"base_url": "127.0.0.1:8080/v1"}}`, `llm.base_url "127.0.0.1:8080/v1" is not an http(s) URL`},
		// The sections their packages declare keep the file and the key.
		{`{"llm": {"retries": -1}}`, ConfigFile + `: llm.retries -1 is negative`},
		{`{"cluster": {"provider": "zk"}}`, ConfigFile + `: cluster.provider "zk" is not known`},
		{`{"memory": {"window_tokens": 100}}`, ConfigFile + `: memory.window_tokens 100 is too small`},
		{`{"memory": {"file": "tools/m.db"}}`, ConfigFile + `: memory.file "tools/m.db" is outside .agentos/`},
		{`{"pii": {"restore_to": ["sql"]}}`, ConfigFile + `: pii.restore_to is set but pii detects nothing`},
		{`{"pii": {"detect": ["email"], "key_file": "k.key"}}`, ConfigFile + `: pii.key_file "k.key" is outside .agentos/`},
		{`{"mcp": {"serve": {"http_addr": "nohost"}}}`, ConfigFile + `: mcp.serve.http_addr "nohost" is not host:port`},
		{`{"mcp": {"servers": {"a": {"command": ["x"], "dir": "../d"}}}}`, ConfigFile + `: mcp.servers.a.dir "../d" must be a directory inside the tool root`},
		{`{"governance": {"gate": {"policy": "stop"}}}`, ConfigFile + `: governance.gate.policy "stop" is not known`},
		{`{"governance": {"approval": {"rights": ["sudo"]}}}`, ConfigFile + `: governance.approval.rights: "sudo" is not a right`},
		{`{"tracing": {"exporter": "zipkin"}}`, ConfigFile + `: tracing.exporter "zipkin" is not known`},
		{`{"secrets": {"k": {"env": "K", "header": "X"}}}`, ConfigFile + `: secrets.k.allow is required`},
		{`{"agents": {"templates": {"t": {"quota": {"x": 1}}}}}`, ConfigFile + `: agents.templates.t.quota has an unknown meter "x"`},
		// The sections moved out of host name the key they refuse.
		{`{"limits": {"memory_mb": -1}}`, ConfigFile + `: limits must not be negative: limits.memory_mb is -1`},
		{`{"sql": {"sqlite": "/var/data.db"}}`, ConfigFile + `: sql.sqlite "/var/data.db" must be a file inside the tool root`},
		{`{"confine": "strict"}`, ConfigFile + `: confine "strict" is not known`},
		{`{"capability": {"signing_key_env": "0123abcd"}}`, ConfigFile + `: capability.signing_key_env "0123abcd" is not an environment variable name`},
		{`{"agents": {"tournament": {"quota": {"usd": 1}}}}`, ConfigFile + `: agents.tournament.quota has an unknown meter "usd"`},
		{`{"secrets": {"k": {"env": "K", "header": "X", "allow": ["http://example.com/"]}}}`, ConfigFile + `: secrets.k.allow "http://example.com/": a secret goes only over https`},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.body), 0o644)
		_, err := LoadConfig(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ConfigFile) {
			t.Errorf("%s: got %v, want an error naming the file and containing %q", tc.body, err, tc.want)
		}
	}
	if _, err := LoadConfig(t.TempDir()); err != nil {
		t.Fatalf("a missing config must mean defaults, got %v", err)
	}
}

// The README's agentos.json loads as written.
func TestLoadConfigFull(t *testing.T) {
	dir := t.TempDir()
	body := `{
  "tools_dir": "tools",
  "isolation": "process",
  "limits": { "timeout": "5s", "memory_mb": 256, "max_call_depth": 1000, "max_output_bytes": 1048576 },
  "journal": ".agentos/journal.db",
  "quota": { "tool_calls": 100000 },
  "agent": {
    "grants": [{ "right": "read", "scope": "tools/" }, { "right": "exec", "scope": "tools/" }],
    "quota": { "tool_calls": 1000, "memory_mb": 512 }
  },
  "git": { "upstream": "../tools.git", "branch": "main", "strategy": "direct" },
  "fetch": { "allow": ["https://api.example.com/v1/"], "timeout": "10s", "max_bytes": 4194304 },
  "sql": { "sqlite": ".agentos/data.db" },
  "llm": { "base_url": "http://127.0.0.1:8080/v1", "model": "qwen2.5-coder", "forge_attempts": 3 },
  "metrics_addr": "127.0.0.1:9464"
}`
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(body), 0o644)
	c, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.DefaultGrants()) != 2 || c.Quota["tool_calls"] != 100000 || c.Agent.Quota["memory_mb"] != 512 || c.MetricsAddr != "127.0.0.1:9464" || c.Git.Upstream != "../tools.git" {
		t.Fatalf("loaded %+v", c)
	}
	if g := (Config{}).DefaultGrants(); len(g) != 8 || g[0].Scope != "tools/" || g[7] != (capability.Grant{Right: capability.MCP}) {
		t.Fatalf("default grants %+v", g)
	}
	// A tool runs with its caller's rights: the default process holds read
	// and write on each write directory (never on "." or outside the root),
	// or its tools could not write where write_dirs says they may.
	g := (Config{WriteDirs: []string{"out", "exports/", ".", "../up"}}).DefaultGrants()
	if want := (Config{}).DefaultGrants(); len(g) != len(want)+4 ||
		!slices.Contains(g, capability.Grant{Right: capability.Write, Scope: "out/"}) || !slices.Contains(g, capability.Grant{Right: capability.Read, Scope: "out/"}) ||
		!slices.Contains(g, capability.Grant{Right: capability.Write, Scope: "exports/"}) || slices.Contains(g, capability.Grant{Right: capability.Write, Scope: "./"}) {
		t.Fatalf("default grants with write_dirs: %+v", g)
	}
}

// journal_durability and journal_sync_runs reach the journal's options.
func TestJournalDurabilityConfig(t *testing.T) {
	for _, tc := range []struct {
		body string
		want journal.Durability
		sync bool
	}{
		{`{}`, journal.GroupCommit, false},
		{`{"journal_durability": "sync_each"}`, journal.SyncEach, false},
		{`{"journal_durability": "no_sync", "journal_sync_runs": true}`, journal.NoSync, true},
		{`{"journal_sync_runs": true}`, journal.GroupCommit, true},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.body), 0o644)
		c, err := LoadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if o := c.JournalOptions(dir); o.Durability != tc.want || o.SyncRuns != tc.sync {
			t.Errorf("%s: durability %v sync_runs %v, want %v %v", tc.body, o.Durability, o.SyncRuns, tc.want, tc.sync)
		}
	}
}
